"""Finding and restoring the trainer's checkpoints, with one-line errors.

    path = latest_or_fail(model_dir)            # newest checkpoint prefix
    restore_or_fail(session, variables, path)   # in a TF1 session

Used by the tools that read a finished run (evaluate, export).
"""
import os

import tensorflow.compat.v1 as tf

from legacy_hvd import cli


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
    reason = getattr(e, "message", str(e)).splitlines()[0]
    cli.fail(f"{path}: not a readable checkpoint of this model ({reason})")
