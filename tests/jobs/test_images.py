"""The stack's image (Containerfile): the legacy stack's, `make image
TF_VERSION=1.15.5`, or the GPU image, `make image
HOROVOD_GPU_OPERATIONS=NCCL`, on the CPU. The main job in it is the job
outside it, run by podman as users run it and by Charliecloud unprivileged.

These run in the TF 1.15 stack's run and in the GPU stack's
(tests/conftest.py: the `image` mark), which compare the image with that
stack's own venv; the image is built first if it is not there.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from legacy_hvd.common import compat
from legacy_hvd.data import embedded
from tests.helpers import assert_ok, horovodrun, images, read_results

pytestmark = pytest.mark.image

TF_VERSION = compat.tf.version.VERSION

JOB_TIMEOUT = 240
STEPS = 20
# The job's own flags: --deterministic, so every run of them is bitwise one.
JOB = ["--batch_size=64", "--deterministic", "--log_every_n_steps=10",
       "--save_checkpoints_steps=10"]


@pytest.fixture(scope="module")
def image():
  """The stack's image, built by `make image` unless it exists."""
  return images.ensure_image()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
  return embedded.ensure_generated(str(tmp_path_factory.mktemp("data")))


@pytest.fixture(scope="module")
def venv_run(tmp_path_factory, data_dir):
  """The main job on this stack's venv, STEPS steps: its model directory."""
  model_dir = tmp_path_factory.mktemp("venv") / "model"
  assert_ok(horovodrun(2, "legacy_hvd.train", [
      *JOB, f"--data_dir={data_dir}", f"--model_dir={model_dir}",
      f"--max_steps={STEPS}"]))
  return model_dir


def in_image(image, argv, data_dir, runs, timeout=JOB_TIMEOUT):
  """`podman run` of argv in the image, as the README runs it: this user,
  the host's network, the data read-only at /data and `runs` at /runs."""
  return subprocess.run(
      ["podman", "run", "--rm", "--network=host",
       f"--user={os.getuid()}:{os.getgid()}",
       "-v", f"{data_dir}:/data:ro", "-v", f"{runs}:/runs", image, *argv],
      capture_output=True, text=True, timeout=timeout)


def train_in_image(image, data_dir, runs, model, steps):
  return in_image(image, [
      "horovodrun", "-np", "2", "-H", "localhost:2", "python", "-m",
      "legacy_hvd.train", *JOB, "--data_dir=/data",
      f"--model_dir=/runs/{model}", f"--max_steps={steps}"], data_dir, runs)


def test_the_image_says_its_stack_and_runs_as_a_user(image):
  inspected = json.loads(subprocess.run(
      ["podman", "image", "inspect", image], capture_output=True, text=True,
      check=True).stdout)[0]
  labels = inspected["Config"]["Labels"]
  assert (labels["legacy-hvd.tensorflow"], labels["legacy-hvd.horovod"]) == (
      TF_VERSION, "0.28.1")
  assert labels["legacy-hvd.python"].startswith("%d.%d." % sys.version_info[:2])
  assert inspected["Config"]["User"] not in ("", "root", "0")
  checked = subprocess.run(
      ["podman", "run", "--rm", "--network=host", image, "sh", "-c",
       "id -u && python /opt/legacy-hvd/src/tools/check_env.py --stack"],
      capture_output=True, text=True, timeout=JOB_TIMEOUT)
  assert_ok(checked)
  assert checked.stdout.split()[0] != "0"
  assert f"TensorFlow {TF_VERSION}, Horovod 0.28.1, Gloo built" in checked.stdout


def test_the_job_in_the_image_is_the_venv_job_and_each_resumes_the_other(
    image, data_dir, venv_run, tmp_path):
  runs = tmp_path / "runs"
  runs.mkdir()
  assert_ok(train_in_image(image, data_dir, runs, "image", STEPS))
  in_the_image, on_the_venv = read_results(runs / "image"), read_results(
      venv_run)
  # Every rank's weights, bit for bit.
  assert in_the_image["weight_digests"] == on_the_venv["weight_digests"]
  assert in_the_image["tensorflow_version"] == TF_VERSION
  # What the image wrote is this user's, as the venv run's is.
  for name in os.listdir(runs / "image"):
    assert os.stat(runs / "image" / name).st_uid == os.getuid(), name

  # Each directory continued by the other: the same weights again.
  shutil.copytree(venv_run, runs / "from-venv")
  assert_ok(train_in_image(image, data_dir, runs, "from-venv", 2 * STEPS))
  assert_ok(horovodrun(2, "legacy_hvd.train", [
      *JOB, f"--data_dir={data_dir}", f"--model_dir={runs / 'image'}",
      f"--max_steps={2 * STEPS}"]))
  resumed_in_image = read_results(runs / "from-venv")
  resumed_outside = read_results(runs / "image")
  assert resumed_in_image["start_step"] == resumed_outside["start_step"] == STEPS
  assert (resumed_in_image["weight_digests"]
          == resumed_outside["weight_digests"])


def test_charliecloud_runs_the_image_unprivileged(image, data_dir, venv_run):
  # Charliecloud, as an HPC site runs an image: converted to a directory
  # once, then run by an ordinary user, with no daemon and no privilege.
  # Everything that user reads or writes lies outside root's private /tmp.
  user = "nobody"
  root = tempfile.mkdtemp(prefix="legacy-hvd-ch-", dir="/var/tmp")
  try:
    os.chmod(root, 0o755)
    flat = images.flat_image(image)
    data, runs = (os.path.join(root, name) for name in ("data", "runs"))
    shutil.copytree(data_dir, data)
    os.mkdir(runs)
    os.chmod(runs, 0o777)
    process = subprocess.run(
        ["runuser", "-u", user, "--", "env", f"USER={user}", "ch-run",
         # The image's own PATH (/ch/environment); HOME on a private /tmp
         # (-t): the image is read-only.
         "-t", "--set-env", "--set-env=HOME=/tmp",
         "-b", f"{data}:/data", "-b", f"{runs}:/runs", flat, "--",
         "horovodrun", "-np", "2", "-H", "localhost:2", "python", "-m",
         "legacy_hvd.train", *JOB, "--data_dir=/data",
         "--model_dir=/runs/ch", f"--max_steps={STEPS}"],
        capture_output=True, text=True, timeout=JOB_TIMEOUT)
    assert_ok(process)
    results = read_results(os.path.join(runs, "ch"))
    assert results["weight_digests"] == read_results(venv_run)[
        "weight_digests"]
    assert os.stat(os.path.join(runs, "ch", "results.json")).st_uid != 0
  finally:
    shutil.rmtree(root, ignore_errors=True)
