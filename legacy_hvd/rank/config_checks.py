"""Flag values each valid but impossible with the data, the world size or each
other, named in one line before any rank trains: else a shard smaller than a
step waits forever for a batch, and a log in a missing directory fails late."""
import os

from legacy_hvd.common import paths
from legacy_hvd.model import schedule


def problem(config, num_examples, world_size):
  """Why the run cannot train as asked, in one line with the numbers; None."""
  shard = num_examples // world_size   # the smallest rank's shard
  per_step = config.batch_size * config.backward_passes_per_step
  if not config.synthetic and per_step > shard:
    asked = f"--batch_size={config.batch_size}"
    if config.backward_passes_per_step > 1:
      asked += (f" x --backward_passes_per_step="
                f"{config.backward_passes_per_step} = {per_step}")
    return (f"{asked} examples per step and rank, but each of "
            f"{world_size} ranks holds only {shard} of the {num_examples} "
            f"training images; expected at most {shard} per step (a smaller "
            "--batch_size, or fewer ranks)")
  steps_per_epoch = schedule.steps_per_epoch(num_examples, config.batch_size,
                                             world_size)
  last_step = config.max_steps or config.epochs * steps_per_epoch
  warmup_steps = round(config.warmup_epochs * steps_per_epoch)
  if warmup_steps and warmup_steps >= last_step:
    length = (f"--max_steps={config.max_steps}" if config.max_steps else
              f"--epochs={config.epochs} ({last_step} steps)")
    return (f"--warmup_epochs={config.warmup_epochs:g} is {warmup_steps} "
            f"steps at {world_size} ranks ({steps_per_epoch} steps per "
            f"epoch), but training ends at {length}; expected a warm-up "
            "shorter than training")
  return None


def file_problem(flag, path):
  """Why `path` cannot be a file to append to (read-only check); None. Its
  directory may not exist yet, but nothing on the way may be a file."""
  if os.path.isdir(path):
    return f"--{flag}={path}: is a directory; expected a file"
  parent = paths.existing_ancestor(os.path.dirname(os.path.abspath(path)))
  if not os.path.isdir(parent):
    return f"--{flag}={path}: {parent} is a file; expected a directory there"
  return None
