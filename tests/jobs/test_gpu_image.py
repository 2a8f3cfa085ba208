"""The GPU image (`make image HOROVOD_GPU_OPERATIONS=NCCL`, docs/gpu.md) on a
machine without a GPU: it holds the GPU stack its labels name and no
compiler, the main job in it on the CPU is the GPU stack's venv job bit for
bit, and the first-node check in it stops in its one line.

These run in the GPU stack's suite (tests/conftest.py: the `gpu_image`
mark), which compares the image with that stack's venv; the image is built
first if it is not there.
"""
import json
import subprocess
from importlib import metadata

import pytest

from legacy_hvd.common import compat
from legacy_hvd.data import embedded
from tests.helpers import assert_ok, horovodrun, images, own_lines, read_results

pytestmark = pytest.mark.gpu_image

TIMEOUT = 240
STEPS = 20
JOB = ["--batch_size=64", "--deterministic", "--log_every_n_steps=10",
       "--save_checkpoints_steps=10"]


@pytest.fixture(scope="module")
def image():
  version = compat.tf.version.VERSION
  return images.ensure_image(f"localhost/legacy-hvd:tf{version}-nccl", (
      f"TF_VERSION={version}", "HOROVOD_GPU_OPERATIONS=NCCL"))


def podman_run(image, *argv, volumes=()):
  """`podman run` as a user runs it on a GPU node, less the GPUs."""
  options = [option for volume in volumes for option in ("-v", volume)]
  return subprocess.run(
      ["podman", "run", "--rm", "--network=host", *options, image, *argv],
      capture_output=True, text=True, timeout=TIMEOUT)


def test_the_gpu_image_holds_the_venvs_cuda_wheels_and_no_compiler(image):
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


def test_the_job_in_the_gpu_image_is_the_venv_job(image, tmp_path):
  data_dir = embedded.ensure_generated(str(tmp_path / "data"))
  runs = tmp_path / "runs"
  runs.mkdir(mode=0o777)
  runs.chmod(0o777)
  assert_ok(podman_run(
      image, "horovodrun", "-np", "2", "-H", "localhost:2", "python", "-m",
      "legacy_hvd.train", *JOB, "--data_dir=/data", "--model_dir=/runs/image",
      f"--max_steps={STEPS}",
      volumes=(f"{data_dir}:/data:ro", f"{runs}:/runs")))
  assert_ok(horovodrun(2, "legacy_hvd.train", [
      *JOB, f"--data_dir={data_dir}", f"--model_dir={runs / 'venv'}",
      f"--max_steps={STEPS}"]))
  assert (read_results(runs / "image")["weight_digests"]
          == read_results(runs / "venv")["weight_digests"])


def test_the_first_node_check_in_the_gpu_image_without_a_gpu_is_one_line(image):
  process = podman_run(image, "python", "-m", "legacy_hvd.launch.gpu_check")
  assert process.returncode == 1
  assert own_lines(process.stderr) == [
      "legacy_hvd.launch.gpu_check: error: no GPU on this host (TensorFlow "
      f"{compat.tf.version.VERSION} lists none, no nvidia-smi on PATH); "
      "expected a node with NVIDIA GPUs and the GPU stack (make install "
      "HOROVOD_GPU_OPERATIONS=NCCL), or --device=cpu to check the check itself"]
