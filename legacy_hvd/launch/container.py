"""The Slurm launcher's tasks in an image: Charliecloud's `ch-run` of a `make
image` image (docs/containers.md). Every check runs before any rank starts
and fails in one line. Python 3.7-compatible."""
import glob
import os
import sys

from legacy_hvd.common import cli

IMAGE_PYTHON = "opt/legacy-hvd/venv/bin/python"   # the Containerfile's venv
HOROVOD = "opt/legacy-hvd/venv/lib/python*/site-packages/horovod"
# The node's Python settings, which would steer the image's Python.
HOST_PYTHON_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV",
                   "LD_LIBRARY_PATH")
NOT_STARTED = "; no rank was started"


def binds(image, bind_values, needs_horovod, model_dir):
  """[(SRC, DST)] of the --bind values for `image` (None: no image), each SRC a
  directory of this node, each DST an existing one of the image (ch-run mounts
  onto what exists: the image is read-only), the model directory under one."""
  if not image:
    if bind_values:
      raise cli.UserError("--bind needs --image (it mounts into the image)"
                          + NOT_STARTED)
    return []
  # A link to the image's own Python: it need not resolve out here.
  if not os.path.lexists(os.path.join(image, IMAGE_PYTHON)):
    raise cli.UserError(
        "--image={}: no legacy-hvd image there (expected the directory "
        "`ch-convert -i podman legacy-hvd:tf1.15.5 DIR` makes, holding "
        "/{}){}".format(image, IMAGE_PYTHON, NOT_STARTED))
  if needs_horovod and not glob.glob(os.path.join(image, HOROVOD)):
    raise cli.UserError(
        "--image={}: the image has no Horovod (the TF 2.21 stack's): its "
        "trainer is --module=legacy_hvd.train_mwms{}".format(image,
                                                             NOT_STARTED))
  pairs = []
  for value in bind_values:
    source, _, target = value.partition(":")
    if not (source and target.startswith("/")):
      raise cli.UserError("--bind={}: expected SRC:DST, DST a path in the "
                          "image such as /data{}".format(value, NOT_STARTED))
    if not os.path.isdir(source):
      raise cli.UserError("--bind={}: {} is not a directory on this "
                          "node{}".format(value, source, NOT_STARTED))
    if not os.path.isdir(os.path.join(image, target.lstrip("/"))):
      raise cli.UserError(
          "--bind={}: the image has no directory {} to mount it on (it has "
          "/data and /runs){}".format(value, target, NOT_STARTED))
    pairs.append((os.path.abspath(source), "/" + target.strip("/")))
  if not any(model_dir == target or model_dir.startswith(target + "/")
             for _, target in pairs):
    raise cli.UserError(
        "--model_dir={}: with --image, the model directory must lie under a "
        "--bind target (such as --bind=/shared/runs:/runs "
        "--model_dir=/runs/cifar10): the image is read-only{}".format(
            model_dir, NOT_STARTED))
  return pairs


def outside(path, pairs):
  """The node's path of the image's `path`, through its innermost bind."""
  for source, target in sorted(pairs, key=lambda pair: -len(pair[1])):
    if path == target or path.startswith(target + "/"):
      return source + path[len(target):]
  return path


def task_command(image, pairs):
  """The argv that starts each task's side: this Python, or the image's under
  ch-run (HOME on a private /tmp: the image is read-only, the node's /tmp is
  every user's)."""
  if not image:
    return [sys.executable]
  command = ["ch-run", "-t", "--set-env", "--set-env=HOME=/tmp"]
  for source, target in pairs:
    command += ["-b", "{}:{}".format(source, target)]
  return command + [os.path.abspath(image), "--", "/" + IMAGE_PYTHON]
