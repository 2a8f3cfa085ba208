"""Checks the machine before the install and the stack after it.

    python tools/check_env.py --prerequisites [--controller mpi] [--tf-version V]   # before the venv
    python tools/check_env.py --stack [--controller mpi]   # inside it, after install

--no-horovod (both): a stack without Horovod, TF >= 2.20, which Horovod
0.28.1 does not build against (the Makefile passes it): no C++ compiler
needed, and --stack checks TensorFlow and tf.distribute instead.

Each failed check prints one line saying what is missing and how to get it,
and exits 1. Uses only the standard library for --prerequisites.
"""
import argparse
import os
import shutil
import subprocess
import sys

OPEN_MPI_PACKAGES = ("libopenmpi-dev", "openmpi-bin")

# TensorFlow 2.15 publishes wheels for CPython 3.9-3.11; 2.16-2.18 add 3.12;
# 2.21 has 3.10-3.13.
# TensorFlow 1.15, the last TF1, for CPython 3.5-3.7: the project needs 3.7.
# By TensorFlow major.minor (docs/stacks.md): the Pythons it has wheels for.
SUPPORTED_PYTHONS = {
    "1.15": ((3, 7),),
    "2.15": ((3, 9), (3, 10), (3, 11)),
    "2.16": ((3, 9), (3, 10), (3, 11), (3, 12)),
    "2.18": ((3, 9), (3, 10), (3, 11), (3, 12)),
    "2.21": ((3, 10), (3, 11), (3, 12), (3, 13)),
}


def fail(message):
  print(f"check_env: {message}", file=sys.stderr)
  sys.exit(1)


def ensure_mpi():
  """Open MPI's compiler wrapper and launcher, installed with apt when root."""
  if shutil.which("mpicxx") and shutil.which("mpirun"):
    return
  command = ["apt-get", "install", "-y", *OPEN_MPI_PACKAGES]
  if os.geteuid() != 0 or not shutil.which("apt-get"):
    fail("Open MPI is missing (mpicxx, mpirun); install it first, e.g. "
         f"'sudo apt-get install {' '.join(OPEN_MPI_PACKAGES)}'")
  print("check_env: installing Open MPI: " + " ".join(command), flush=True)
  subprocess.run(["apt-get", "update", "-qq"], check=False)
  if subprocess.run(command, env=dict(os.environ,
                                      DEBIAN_FRONTEND="noninteractive")).returncode:
    fail("installing Open MPI failed; run: " + " ".join(command))


def check_prerequisites(controller, tf_version, horovod=True):
  version = sys.version_info[:2]
  supported = SUPPORTED_PYTHONS.get(".".join(tf_version.split(".")[:2]), ())
  if version not in supported:
    fail(f"Python {version[0]}.{version[1]} is not supported with TensorFlow "
         f"{tf_version}; expected one of "
         + ", ".join(f"{a}.{b}" for a, b in supported)
         + f" (set PYTHON=python{supported[-1][0]}.{supported[-1][1]} for make)"
         if supported else f"TensorFlow {tf_version}: expected one of "
         + ", ".join(SUPPORTED_PYTHONS))
  try:
    import venv  # noqa: F401  (Debian ships it separately: python3-venv)
  except ImportError:
    fail("the Python venv module is missing; install python3-venv")
  if not horovod:   # nothing to compile
    return
  for compiler in ("g++", "c++", "clang++"):
    if shutil.which(compiler):
      break
  else:
    fail("no C++ compiler found (g++, c++ or clang++); Horovod is built from "
         "source: install one, e.g. 'apt-get install g++'")
  if not shutil.which("make"):
    fail("make is missing; install it, e.g. 'apt-get install make'")
  if controller == "mpi":
    ensure_mpi()


def check_stack_without_horovod(tf, compat):
  """TF >= 2.20: TensorFlow runs eagerly and tf.distribute's collectives
  (what legacy_hvd.train_mwms uses instead of Horovod) reduce in one
  process."""
  compat.enable_v2_behavior()
  strategy = tf.distribute.MultiWorkerMirroredStrategy()
  total = strategy.reduce(tf.distribute.ReduceOp.SUM,
                          strategy.run(lambda: tf.constant([1.0, 2.0])),
                          axis=None)
  if total.numpy().tolist() != [1.0, 2.0]:
    fail(f"a one-process tf.distribute reduce returned {total.numpy()}, "
         "expected [1, 2]")
  print(f"check_env: TensorFlow {tf.__version__}, no Horovod (it does not "
        "build against TF >= 2.20), tf.distribute reduce: ok")


def check_stack(controller, horovod=True):
  try:
    import tensorflow as tf
    from legacy_hvd.common import compat
  except ImportError as e:
    fail(f"TensorFlow does not import: {e}")
  if not horovod:
    return check_stack_without_horovod(tf, compat)
  try:
    import horovod
    import horovod.tensorflow as hvd
  except Exception as e:  # a wheel built against another TF fails to load its ops
    fail(f"horovod.tensorflow does not load against TensorFlow {tf.__version__}: "
         f"{e}; rebuild it with 'make clean install'")
  if not hvd.gloo_built():
    fail("Horovod was built without Gloo; rebuild with HOROVOD_WITH_GLOO=1")
  if controller == "mpi" and not hvd.mpi_built():
    fail("Horovod was built without MPI; remove its venv and cached wheel "
         "(~/.cache/legacy-hvd/wheels/*-mpi) and run 'make install "
         "HOROVOD_CONTROLLER=mpi'")
  compat.enable_v2_behavior()   # eager, for the allreduce below
  hvd.init()
  total = hvd.allreduce(tf.constant([1.0, 2.0]), op=hvd.Sum)
  if total.numpy().tolist() != [1.0, 2.0]:
    fail(f"a one-process allreduce returned {total.numpy()}, expected [1, 2]")
  print(f"check_env: TensorFlow {tf.__version__}, Horovod {horovod.__version__}, "
        f"Gloo built, MPI built: {hvd.mpi_built()}, ops load: ok")


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  group = parser.add_mutually_exclusive_group(required=True)
  group.add_argument("--prerequisites", action="store_true")
  group.add_argument("--stack", action="store_true")
  parser.add_argument("--controller", choices=("gloo", "mpi"), default="gloo")
  parser.add_argument("--tf-version", default="2.15.1",
                      help="the TensorFlow the venv will get (--prerequisites)")
  parser.add_argument("--no-horovod", dest="horovod", action="store_false",
                      help="a stack without Horovod (TF >= 2.20)")
  args = parser.parse_args()
  if args.prerequisites:
    check_prerequisites(args.controller, args.tf_version, args.horovod)
  else:
    check_stack(args.controller, args.horovod)


if __name__ == "__main__":
  main()
