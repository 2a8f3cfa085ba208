"""The newest checkpoint's step, read without TensorFlow.

    step = checkpoint_state.latest_step(model_dir)   # 0 when there is none
    step = checkpoint_state.step_of("model.ckpt-500")   # 500

Every trainer's checkpoint names end in `-<global step>` (model.ckpt-500,
ckpt-500), and TensorFlow's `checkpoint` state file in the model directory
names the newest one. The trainers, the fault lines and the Slurm launcher
(which starts no TensorFlow) all read the step here. Only the name's end is
read: the state file may hold the path as another host (or mount
namespace) sees it, or as the directory was before it was moved.
"""
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
