"""Checks the machine before the install and the stack after it.

    python tools/check_env.py --prerequisites [--controller mpi] [--tf-version V]   # before the venv
    python tools/check_env.py --stack [--controller mpi]   # inside it, after install
    python tools/check_env.py --nccl-build-dir DIR   # inside it, before a GPU build

--gpu [--cuda-home DIR --tf-cuda V] (with --prerequisites or --stack): the GPU flavour
(make install HOROVOD_GPU_OPERATIONS=NCCL, docs/gpu.md): before the venv,
that the stack has a GPU build and DIR/bin/nvcc can serve its CUDA V; after,
that Horovod was built with NCCL. --nccl-build-dir lays out the NCCL of the
venv's nvidia-nccl-cu12 wheel as Horovod's build looks for it (DIR/include,
DIR/lib).

--no-horovod (both): a stack without Horovod, TF >= 2.20, which Horovod
0.28.1 does not build against (the Makefile passes it): no C++ compiler
needed, and --stack checks TensorFlow and tf.distribute instead.

Each failed check prints one line saying what is missing and how to get it,
and exits 1. Uses only the standard library for --prerequisites.
"""
import argparse
import importlib.util
import os
import re
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


def check_gpu_prerequisites(tf_version, horovod, cuda_home, tf_cuda):
  """The GPU flavour: a TensorFlow with Horovod and a GPU wheel, and a CUDA
  compiler for Horovod's kernels that can serve TensorFlow's CUDA (tf_cuda,
  "12.2": the cuda-runtime wheel TensorFlow pins); a warning line when the
  toolkit's CUDA is newer than TensorFlow's (a newer driver then)."""
  flavour = "HOROVOD_GPU_OPERATIONS=NCCL"
  if tf_version.startswith("1."):
    fail(f"{flavour}: no GPU build for TensorFlow {tf_version}: it needs "
         "CUDA 10.0 and cuDNN 7.6, which no package registry has as wheels; "
         "expected a TF 2 stack (TF_VERSION=2.15.1), or an NGC TF1 image "
         "(docs/gpu.md)")
  if not horovod:
    fail(f"{flavour}: no Horovod on TensorFlow {tf_version} (Horovod 0.28.1 "
         "does not build against TF >= 2.20); expected TF_VERSION=2.15.1, "
         "2.16.2 or 2.18.1")
  if not tf_cuda:
    fail(f"{flavour}: TensorFlow {tf_version}'s constraints pin no "
         "nvidia-cuda-runtime-cu12; expected its and-cuda pins there, as in "
         "constraints/tf-2.15.1.txt")
  tf_cuda = ".".join(tf_cuda.split(".")[:2])   # 12.2.140 -> 12.2
  tf_major = int(tf_cuda.split(".")[0])
  nvcc = os.path.join(cuda_home, "bin", "nvcc")
  if not os.access(nvcc, os.X_OK):
    fail(f"{flavour}: no CUDA compiler at {nvcc}; expected CUDA_HOME to be "
         f"a CUDA {tf_major} toolkit's directory (e.g. 'make install "
         f"{flavour} CUDA_HOME=/usr/local/cuda-{tf_cuda}', or 'module load "
         "cuda' first)")
  output = subprocess.run([nvcc, "--version"], capture_output=True,
                          text=True).stdout
  release = re.search(r"release (\d+)\.(\d+)", output)
  if not release:
    fail(f"{flavour}: {nvcc} --version names no CUDA release; expected "
         "a working CUDA toolkit at CUDA_HOME")
  toolkit = f"{release.group(1)}.{release.group(2)}"
  if int(release.group(1)) < tf_major:
    fail(f"{flavour}: {nvcc} is CUDA {toolkit}, older than TensorFlow "
         f"{tf_version}'s CUDA {tf_cuda}; expected CUDA_HOME to be a CUDA "
         f"{tf_major} toolkit or newer")
  if int(release.group(1)) > tf_major:
    print(f"check_env: warning: {nvcc} is CUDA {toolkit}, TensorFlow "
          f"{tf_version}'s wheels CUDA {tf_cuda}: Horovod's kernels will need "
          f"a driver for CUDA {toolkit} (docs/gpu.md); a CUDA {tf_major} "
          "toolkit at CUDA_HOME avoids that", flush=True)


def lay_out_nccl(build_dir):
  """DIR/include and DIR/lib/libnccl.so{,.2} as links into the venv's
  nvidia-nccl-cu12 wheel: HOROVOD_NCCL_HOME for the build (the wheel has
  libnccl.so.2 alone, and the linker looks for libnccl.so)."""
  spec = importlib.util.find_spec("nvidia.nccl")
  if spec is None or not spec.submodule_search_locations:
    fail("no nvidia-nccl-cu12 in this venv (TensorFlow's and-cuda extra "
         "installs it); expected 'pip install tensorflow[and-cuda]' first")
  wheel = list(spec.submodule_search_locations)[0]
  library = os.path.join(wheel, "lib", "libnccl.so.2")
  header = os.path.join(wheel, "include", "nccl.h")
  for needed in (library, header):
    if not os.path.exists(needed):
      fail(f"the nvidia-nccl-cu12 wheel has no {needed}; expected its "
           "include/nccl.h and lib/libnccl.so.2")
  os.makedirs(os.path.join(build_dir, "lib"), exist_ok=True)
  links = {os.path.join(build_dir, "include"): os.path.dirname(header),
           os.path.join(build_dir, "lib", "libnccl.so"): library,
           os.path.join(build_dir, "lib", "libnccl.so.2"): library}
  for link, target in links.items():
    if os.path.lexists(link):
      os.remove(link)
    os.symlink(target, link)
  print(f"check_env: NCCL for the build: {build_dir} -> {wheel}")


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


def check_stack(controller, horovod=True, gpu=False):
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
  if gpu and not hvd.nccl_built():
    fail("Horovod was built without NCCL; remove its venv and cached wheel "
         "(~/.cache/legacy-hvd/wheels/*-nccl) and run 'make install "
         "HOROVOD_GPU_OPERATIONS=NCCL'")
  compat.enable_v2_behavior()   # eager, for the allreduce below
  hvd.init()
  total = hvd.allreduce(tf.constant([1.0, 2.0]), op=hvd.Sum)
  if total.numpy().tolist() != [1.0, 2.0]:
    fail(f"a one-process allreduce returned {total.numpy()}, expected [1, 2]")
  print(f"check_env: TensorFlow {tf.__version__}, Horovod {horovod.__version__}, "
        f"Gloo built, MPI built: {hvd.mpi_built()}, ops load: ok")
  if gpu:   # the allreduce above ran on the CPU: no GPU or driver needed
    version = hvd.nccl_built()   # NCCL_VERSION_CODE: 21605 is 2.16.5
    print(f"check_env: NCCL built: {version // 10000}.{version // 100 % 100}."
          f"{version % 100}, GPUs visible: "
          f"{len(tf.config.list_physical_devices('GPU'))}")


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  group = parser.add_mutually_exclusive_group(required=True)
  group.add_argument("--prerequisites", action="store_true")
  group.add_argument("--stack", action="store_true")
  group.add_argument("--nccl-build-dir", metavar="DIR",
                     help="lay out the venv's NCCL for Horovod's GPU build")
  parser.add_argument("--controller", choices=("gloo", "mpi"), default="gloo")
  parser.add_argument("--tf-version", default="2.15.1",
                      help="the TensorFlow the venv will get (--prerequisites)")
  parser.add_argument("--no-horovod", dest="horovod", action="store_false",
                      help="a stack without Horovod (TF >= 2.20)")
  parser.add_argument("--gpu", action="store_true",
                      help="the GPU flavour (HOROVOD_GPU_OPERATIONS=NCCL)")
  parser.add_argument("--cuda-home", default="/usr/local/cuda",
                      help="the CUDA toolkit Horovod's GPU build compiles with")
  parser.add_argument("--tf-cuda", default="",
                      help="the CUDA of TensorFlow's GPU wheels, e.g. 12.2")
  parser.add_argument("--image", action="store_true",
                      help="make image: the GPU checks alone (the build "
                      "stage checks the rest)")
  args = parser.parse_args()
  if args.nccl_build_dir:
    lay_out_nccl(os.path.abspath(args.nccl_build_dir))
  elif args.prerequisites:
    if args.gpu:
      check_gpu_prerequisites(args.tf_version, args.horovod,
                              args.cuda_home, args.tf_cuda)
    if not args.image:
      check_prerequisites(args.controller, args.tf_version, args.horovod)
  else:
    check_stack(args.controller, args.horovod, args.gpu)


if __name__ == "__main__":
  main()
