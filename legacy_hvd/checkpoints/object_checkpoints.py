"""Rank 0's TF2 object checkpoints, with the same keys for every eager
trainer: its newest restored (another trainer's converted first), then saved
every N steps and where training ends."""
import tensorflow.compat.v2 as tf

from legacy_hvd.checkpoints import migration
from legacy_hvd.checkpoints import resume


def restore_newest(model_dir, step, optimizer, params, lr_schedule):
  """Rank 0's Checkpoints, after restoring its newest checkpoint (another
  trainer's converted first); the other ranks get its values by broadcast."""
  checkpoint = tf.train.Checkpoint(
      step=step, optimizer=optimizer,
      **{resume.tf2_attribute(name): variable
         for name, variable in params.items()})
  migration.to_tf2(model_dir, checkpoint, step, optimizer, params,
                   lr_schedule)
  # Now: made in fit's strategy scope, its start would be a broadcast.
  checkpoint.save_counter  # pylint: disable=pointless-statement
  manager = tf.train.CheckpointManager(checkpoint, model_dir,
                                       max_to_keep=resume.KEPT)
  if not manager.latest_checkpoint:
    return Checkpoints(manager, None)
  # Optimizer slots that do not exist yet are restored when first built.
  checkpoint.restore(manager.latest_checkpoint)
  return Checkpoints(manager, int(step.numpy()))


class Checkpoints:
  """Rank 0's saves: every N steps, and where training ends unless saved."""

  def __init__(self, manager, saved_step):
    self._manager = manager   # tf.train.CheckpointManager
    self._saved_step = saved_step

  def save_every(self, step, every_n_steps):
    if step % every_n_steps == 0:
      self._save(step)

  def save_at_end(self, step):
    if step != self._saved_step:
      self._save(step)

  def _save(self, step):
    self._manager.save(checkpoint_number=step)
    self._saved_step = step
