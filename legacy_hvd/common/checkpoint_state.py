"""The newest checkpoint's step, read without TensorFlow (the Slurm launcher
starts none), from the `-<global step>` end of its name only: the state file
may hold the path as another host saw it, or from before a move."""
import os
import re

STATE_FILE = "checkpoint"
_NEWEST = re.compile(r'^model_checkpoint_path: ".*-(\d+)"$', re.MULTILINE)
_STEP = re.compile(r"-(\d+)$")


def latest_step(model_dir):
  """The global step of the newest checkpoint named in `model_dir`, or 0."""
  try:
    with open(os.path.join(model_dir, STATE_FILE)) as f:
      newest = _NEWEST.search(f.read())
  except (OSError, UnicodeDecodeError):
    return 0
  return int(newest.group(1)) if newest else 0


def step_of(path):
  """The global step a checkpoint's name ends in, or -1 if none."""
  found = _STEP.search(path)
  return int(found.group(1)) if found else -1
