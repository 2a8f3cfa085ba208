"""Checks the machine before the install and the stack after it.

    python tools/check_env.py --prerequisites   # before the venv is made
    python tools/check_env.py --stack           # inside the venv, after install

Each failed check prints one line saying what is missing and how to get it,
and exits 1. Uses only the standard library for --prerequisites.
"""
import argparse
import shutil
import sys

# TensorFlow 2.15 publishes wheels for CPython 3.9-3.11; 2.16-2.18 add 3.12.
SUPPORTED_PYTHONS = ((3, 9), (3, 10), (3, 11), (3, 12))


def fail(message):
  print(f"check_env: {message}", file=sys.stderr)
  sys.exit(1)


def check_prerequisites():
  version = sys.version_info[:2]
  if version not in SUPPORTED_PYTHONS:
    fail(f"Python {version[0]}.{version[1]} is not supported; expected one of "
         + ", ".join(f"{a}.{b}" for a, b in SUPPORTED_PYTHONS)
         + " (set PYTHON=python3.11 for make)")
  try:
    import venv  # noqa: F401  (Debian ships it separately: python3-venv)
  except ImportError:
    fail("the Python venv module is missing; install python3-venv")
  for compiler in ("g++", "c++", "clang++"):
    if shutil.which(compiler):
      break
  else:
    fail("no C++ compiler found (g++, c++ or clang++); Horovod is built from "
         "source: install one, e.g. 'apt-get install g++'")
  if not shutil.which("make"):
    fail("make is missing; install it, e.g. 'apt-get install make'")


def check_stack():
  try:
    import tensorflow as tf
  except ImportError as e:
    fail(f"TensorFlow does not import: {e}")
  try:
    import horovod
    import horovod.tensorflow as hvd
  except Exception as e:  # a wheel built against another TF fails to load its ops
    fail(f"horovod.tensorflow does not load against TensorFlow {tf.__version__}: "
         f"{e}; rebuild it with 'make clean install'")
  if not hvd.gloo_built():
    fail("Horovod was built without Gloo; rebuild with HOROVOD_WITH_GLOO=1")
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
  args = parser.parse_args()
  if args.prerequisites:
    check_prerequisites()
  else:
    check_stack()


if __name__ == "__main__":
  main()
