"""The GPU image (`make image HOROVOD_GPU_OPERATIONS=NCCL`, docs/gpu.md) on a
machine without a GPU: it holds the GPU stack its labels name and no
compiler, and the first-node check in it stops in its one line. The main
job in it, locally, across hosts and under Slurm, is the image tests'
(test_images.py, test_hosts_image.py), which the GPU stack's suite runs on
it.

These run in the GPU stack's suite (tests/conftest.py: the `gpu_image`
mark); the image is built first if it is not there.
"""
import json
import subprocess

import pytest

from legacy_hvd.common import compat
from tests.helpers import assert_ok, images, own_lines

pytestmark = pytest.mark.gpu_image

TIMEOUT = 240


@pytest.fixture(scope="module")
def image():
  return images.ensure_image()


def podman_run(image, *argv):
  """`podman run` as a user runs it on a GPU node, less the GPUs."""
  return subprocess.run(["podman", "run", "--rm", "--network=host", image, *argv],
                        capture_output=True, text=True, timeout=TIMEOUT)


def test_the_gpu_image_holds_the_venvs_cuda_wheels_and_no_compiler(image):
  from importlib import metadata   # not on the TF 1.15 stack's Python 3.7
  labels = json.loads(subprocess.run(
      ["podman", "image", "inspect", image], capture_output=True, text=True,
      check=True).stdout)[0]["Config"]["Labels"]
  assert labels["legacy-hvd.horovod-gpu-operations"] == "NCCL"
  assert (labels["legacy-hvd.cuda"], labels["legacy-hvd.cudnn"],
          labels["legacy-hvd.nccl"]) == tuple(
              metadata.version(f"nvidia-{name}-cu12")
              for name in ("cuda-runtime", "cudnn", "nccl"))
  checked = podman_run(image, "sh", "-c",
                       "command -v nvcc gcc cc c++ cmake; "
                       "python /opt/legacy-hvd/src/tools/check_env.py --stack --gpu")
  assert_ok(checked)
  lines = checked.stdout.splitlines()
  assert lines[0].startswith("check_env: TensorFlow "), "a compiler is in it"
  assert f"NCCL built: {labels['legacy-hvd.nccl']}" in checked.stdout


def test_the_first_node_check_in_the_gpu_image_without_a_gpu_is_one_line(image):
  process = podman_run(image, "python", "-m", "legacy_hvd.launch.gpu_check")
  assert process.returncode == 1
  assert own_lines(process.stderr) == [
      "legacy_hvd.launch.gpu_check: error: no GPU on this host (TensorFlow "
      f"{compat.tf.version.VERSION} lists none, no nvidia-smi on PATH); "
      "expected a node with NVIDIA GPUs and the GPU stack (make install "
      "HOROVOD_GPU_OPERATIONS=NCCL), or --device=cpu to check the check itself"]
