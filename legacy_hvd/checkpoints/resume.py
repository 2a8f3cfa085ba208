"""Finding and restoring the trainer's checkpoints, with one-line errors.

    path = latest_or_fail(model_dir)            # newest checkpoint prefix
    restore_or_fail(session, variables, path)   # in a TF1 session
    path = prepare_resume(model_dir, shapes)    # trainer, rank 0: verified
    tf2_key("conv1/weights")   # a TF1 name's key in a TF2 object checkpoint

Checkpoints themselves are written by tf.train.Saver, which writes the new
files under temporary names and only then rewrites the `checkpoint` state
file (atomically, by rename): a job killed while saving leaves the state
pointing at the previous, complete checkpoint.
"""
import os

from absl import logging
import tensorflow.compat.v1 as tf

from legacy_hvd.common import cli


def tf2_attribute(name):
  """'conv1/weights' -> its attribute name in a TF2 object checkpoint."""
  return name.replace("/", "_")


def tf2_key(name):
  """'conv1/weights' -> the key of its value in a TF2 object checkpoint."""
  return tf2_attribute(name) + "/.ATTRIBUTES/VARIABLE_VALUE"


def latest_or_fail(model_dir):
  path = (tf.train.latest_checkpoint(model_dir) if os.path.isdir(model_dir)
          else None)
  if path is None:
    cli.fail(f"--model_dir={model_dir}: holds no checkpoint; expected a "
             "directory written by legacy_hvd.train")
  return path


def restore_or_fail(session, variables, path):
  try:
    tf.train.Saver(variables).restore(session, path)
  except (tf.errors.NotFoundError, tf.errors.InvalidArgumentError,
          tf.errors.DataLossError, ValueError) as e:
    cli.fail(f"{path}: not a readable checkpoint of this model "
             f"({first_line(e)})")


def prepare_resume(model_dir, expected_shapes):
  """Rank 0, before training: the checkpoint to resume from, or None.

  Reads every tensor of the newest checkpoint (the bundle format checks each
  one's CRC). If it is damaged, says so and falls back to the one before,
  pointing the directory's `checkpoint` state file at it so that
  MonitoredTrainingSession restores that one. A checkpoint whose variables
  are not `expected_shapes` (name -> shape) is another model's: that is the
  user's mistake, not damage: raises cli.UserError.
  """
  try:
    state = tf.train.get_checkpoint_state(model_dir)
  except Exception as e:  # a damaged state file fails to parse in many ways
    raise cli.UserError(f"--model_dir={model_dir}: its 'checkpoint' file is unreadable "
             f"({type(e).__name__}); expected the trainer's checkpoint "
             "state") from None
  if state is None:
    return None
  paths = list(state.all_model_checkpoint_paths) or [
      state.model_checkpoint_path]
  for index in range(len(paths) - 1, -1, -1):
    problem = _damage(paths[index], expected_shapes, model_dir)
    if problem is None:
      if paths[index] != state.model_checkpoint_path:
        tf.train.update_checkpoint_state(
            model_dir, paths[index],
            all_model_checkpoint_paths=paths[:index + 1])
      return paths[index]
    logging.warning("Checkpoint %s is damaged (%s); falling back to the one "
                    "before it", paths[index], problem)
  raise cli.UserError(f"--model_dir={model_dir}: no readable checkpoint is "
                      "left; move the directory away to start afresh")


def _damage(path, expected_shapes, model_dir):
  """None if `path` reads completely, else what is wrong with it."""
  try:
    reader = tf.train.load_checkpoint(path)
    shapes = reader.get_variable_to_shape_map()
  except (tf.errors.OpError, ValueError) as e:
    return first_line(e)
  for name, shape in expected_shapes.items():
    if name not in shapes or tuple(shapes[name]) != tuple(shape):
      found = (f"has {name} {list(shapes[name])}" if name in shapes
               else f"lacks {name}")
      raise cli.UserError(
          f"--model_dir={model_dir}: {os.path.basename(path)} is a checkpoint "
          f"of a different model ({found}, expected {list(shape)}); use a "
          "new --model_dir")
  try:
    for name in shapes:
      reader.get_tensor(name)
  except (tf.errors.OpError, ValueError) as e:
    return first_line(e)
  return None


def first_line(error):
  """The first line of an error's message (TensorFlow's run on)."""
  return getattr(error, "message", str(error)).strip().splitlines()[0]
