"""The GPU flavour's bad input stops before anything is built or written.

`make install HOROVOD_GPU_OPERATIONS=NCCL` (docs/gpu.md) checks, before
the venv: a GPU value it knows, a stack with a GPU build and Horovod, and a
CUDA toolkit whose nvcc can serve TensorFlow's CUDA. Each refusal is one
line of ours and no venv. These run make and tools/check_env.py as a user
would, with the machine's own CUDA toolkit where one is needed; the GPU
build itself is `make install HOROVOD_GPU_OPERATIONS=NCCL` (not in CI: its
figures are in docs/gpu.md). `make image HOROVOD_GPU_OPERATIONS=NCCL` makes
the same checks before podman starts, and labels the image with the stack's
pins (tests/jobs/test_gpu_image.py builds and runs it, in the GPU stack's
suite).
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.one_stack

# The machine's CUDA toolkit, found as the Makefile finds it.
NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
# What --cuda-home takes: the directory whose bin/nvcc that is.
CUDA_HOME = os.path.dirname(os.path.dirname(os.path.realpath(NVCC)))
needs_toolkit = pytest.mark.skipif(
    not os.access(NVCC, os.X_OK), reason="no CUDA toolkit (nvcc) here")


def make(*arguments):
  """`make ARGUMENTS` on the default stack unless they name another, as a
  user types it: not the suite's own make's variables (`make test
  TF_VERSION=2.21.0` hands them down in MAKEFLAGS)."""
  env = {name: value for name, value in os.environ.items()
         if name not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "TF_VERSION")}
  return subprocess.run(["make", "-C", REPO, "--no-print-directory", *arguments],
                        env=env, capture_output=True, text=True, timeout=120)


def make_install(tmp_path, *variables):
  venv = tmp_path / "venv"
  process = make("install", f"VENV={venv}", *variables)
  assert not venv.exists(), "the refused set-up left a venv behind"
  return process


def check_env(*args):
  return subprocess.run(
      [sys.executable, os.path.join(REPO, "tools", "check_env.py"),
       "--prerequisites", "--gpu", *args],
      capture_output=True, text=True, timeout=120)


def the_line(process, source):
  """The one line of ours a refusal printed (make adds its own after it)."""
  assert process.returncode != 0
  assert "Traceback" not in process.stderr
  ours = [line for line in process.stderr.splitlines()
          if line.startswith(source)]
  assert len(ours) == 1, process.stderr
  return ours[0]


def test_an_unknown_gpu_value_is_one_line(tmp_path):
  line = the_line(make_install(tmp_path, "HOROVOD_GPU_OPERATIONS=CUDA"),
                  "Makefile")
  assert "HOROVOD_GPU_OPERATIONS=CUDA: expected NCCL" in line


@pytest.mark.parametrize("tf_version, expected", [
    ("1.15.5", "no GPU build for TensorFlow 1.15.5: it needs CUDA 10.0"),
    ("2.21.0", "no Horovod on TensorFlow 2.21.0"),
])
def test_a_stack_without_a_gpu_build_is_one_line(tmp_path, tf_version,
                                                  expected):
  line = the_line(make_install(tmp_path, "HOROVOD_GPU_OPERATIONS=NCCL",
                               f"TF_VERSION={tf_version}"), "check_env:")
  assert expected in line and "expected" in line


def test_no_cuda_toolkit_is_one_line(tmp_path):
  line = the_line(make_install(tmp_path, "HOROVOD_GPU_OPERATIONS=NCCL",
                               f"CUDA_HOME={tmp_path / 'cuda'}"), "check_env:")
  assert f"no CUDA compiler at {tmp_path / 'cuda' / 'bin' / 'nvcc'}" in line
  assert "expected CUDA_HOME to be a CUDA 12 toolkit" in line


@needs_toolkit
def test_a_toolkit_older_than_tensorflows_cuda_is_one_line():
  # The machine's toolkit against a TensorFlow CUDA newer than any: the
  # verdict a CUDA 11 toolkit gets against TF 2.15's CUDA 12.2.
  line = the_line(check_env("--cuda-home", CUDA_HOME, "--tf-cuda", "99.0"),
                  "check_env:")
  assert "older than TensorFlow 2.15.1's CUDA 99.0" in line


@needs_toolkit
def test_a_newer_toolkit_warns_of_the_driver_and_goes_on():
  process = check_env("--cuda-home", CUDA_HOME, "--tf-cuda", "1.0")
  assert process.returncode == 0, process.stderr
  assert "TensorFlow 2.15.1's wheels CUDA 1.0: Horovod's kernels will need " \
         "a driver for CUDA" in process.stdout


def test_the_gpu_image_of_a_stack_without_one_is_one_line_before_podman():
  process = make("image", "HOROVOD_GPU_OPERATIONS=NCCL", "TF_VERSION=1.15.5")
  line = the_line(process, "check_env:")
  assert "no GPU build for TensorFlow 1.15.5" in line
  assert "podman" not in process.stdout


@needs_toolkit
def test_the_gpu_image_is_labelled_with_tensorflows_cuda_and_builds_on_the_toolkit():
  process = make("-n", "image", "HOROVOD_GPU_OPERATIONS=NCCL")
  assert process.returncode == 0, process.stderr
  build = process.stdout[process.stdout.index("podman build"):]
  # tensorflow[and-cuda]==2.15.1's own pins (docs/gpu.md).
  for argument in ("HOROVOD_GPU_OPERATIONS=NCCL", "CUDA_VERSION=12.2.140",
                   "CUDNN_VERSION=8.9.4.25", "NCCL_VERSION=2.16.5",
                   "NVIDIA_VISIBLE_DEVICES=all"):
    assert f"--build-arg {argument} " in build
  toolkit = re.search(r" -v (\S+):/usr/local/cuda:ro ", build).group(1)
  assert os.access(os.path.join(toolkit, "bin", "nvcc"), os.X_OK)
  assert build.rstrip().endswith("-t legacy-hvd:tf2.15.1-nccl .")


def test_the_images_labels_must_name_its_cuda_wheels():
  # This stack's own versions, but a CUDA runtime no stack has.
  import tensorflow as tf
  horovod = "0.28.1" if importlib.util.find_spec("horovod") else "none"
  process = subprocess.run(
      [sys.executable, os.path.join(REPO, "tools", "images.py"), "labels",
       "--tf-version", tf.version.VERSION,
       "--python-version", "%d.%d" % sys.version_info[:2],
       "--horovod-version", horovod,
       "--horovod-controller", "gloo" if horovod != "none" else "none",
       "--cuda-version", "99.9"], capture_output=True, text=True, timeout=120)
  line = the_line(process, "images:")
  assert re.fullmatch(
      r"images: the image's nvidia-cuda-runtime-cu12 is (\S+), its cuda label "
      r"says 99\.9 \(pass --build-arg CUDA_VERSION=\1\)", line), line
