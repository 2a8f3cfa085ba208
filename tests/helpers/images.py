"""The image of the stack the suite runs on, for the tests: built by `make
image` unless it is there, and flattened once for Charliecloud. The TF 1.15
stack's suite tests its image; the GPU stack's (make test
HOROVOD_GPU_OPERATIONS=NCCL) the GPU image.

    image = ensure_image()            # "localhost/legacy-hvd:tf1.15.5"
    directory = flat_image(image)     # ch-run's image directory, shared
"""
import fcntl
import os
import shutil
import subprocess
import sysconfig

from legacy_hvd.common import compat
from tests.helpers import REPO, assert_ok

# The GPU stack: TensorFlow's NCCL wheel beside it.
GPU_STACK = os.path.isdir(os.path.join(sysconfig.get_paths()["purelib"],
                                       "nvidia", "nccl"))
if GPU_STACK:
  IMAGE = f"localhost/legacy-hvd:tf{compat.tf.version.VERSION}-nccl"
  MAKE_IMAGE = (f"TF_VERSION={compat.tf.version.VERSION}",
                "HOROVOD_GPU_OPERATIONS=NCCL")
else:
  IMAGE = "localhost/legacy-hvd:tf1.15.5"
  MAKE_IMAGE = ("TF_VERSION=1.15.5",)
BUILD_TIMEOUT = 1200   # a Horovod compile and a TF 1.15 download at worst
CONVERT_TIMEOUT = 600
# ch-convert's directories, one per image id: every test (and test worker)
# reads the one made first. Outside /tmp: test users who are not root
# read it, and a root-private /tmp would hide it from them.
FLAT_ROOT = "/var/tmp/legacy-hvd-ch"


def ensure_image():
  if subprocess.run(["podman", "image", "exists", IMAGE]).returncode != 0:
    assert_ok(subprocess.run(["make", "image", *MAKE_IMAGE],
                             cwd=REPO, capture_output=True, text=True,
                             timeout=BUILD_TIMEOUT))
  return IMAGE


def flat_image(image):
  """`ch-convert -i podman image DIR` once per image id; DIR."""
  image_id = subprocess.run(
      ["podman", "image", "inspect", "--format", "{{.Id}}", image],
      capture_output=True, text=True, check=True).stdout.strip()[:12]
  os.makedirs(FLAT_ROOT, mode=0o755, exist_ok=True)
  os.chmod(FLAT_ROOT, 0o755)
  directory = os.path.join(FLAT_ROOT, image_id)
  with open(os.path.join(FLAT_ROOT, ".lock"), "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not os.path.isdir(directory):
      for stale in os.listdir(FLAT_ROOT):   # earlier builds' directories
        if not stale.startswith("."):
          shutil.rmtree(os.path.join(FLAT_ROOT, stale), ignore_errors=True)
      partial = directory + ".partial"
      shutil.rmtree(partial, ignore_errors=True)
      assert_ok(subprocess.run(["ch-convert", "-i", "podman", image, partial],
                               capture_output=True, text=True,
                               timeout=CONVERT_TIMEOUT))
      os.rename(partial, directory)
  return directory
