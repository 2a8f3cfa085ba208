"""Flags only the Keras fit variant has: none; it refuses TF1-only settings."""
from absl import flags


def define_keras(flag_values=flags.FLAGS):
  @flags.validator("backward_passes_per_step",
                   message="--backward_passes_per_step must be 1 in the Keras "
                   "fit variant; use legacy_hvd.train for gradient "
                   "accumulation", flag_values=flag_values)
  def _no_accumulation(value):
    return value == 1

  @flags.validator("horovod", message="--nohorovod is a mode of "
                   "legacy_hvd.train only; the Keras fit variant always runs "
                   "Horovod", flag_values=flag_values)
  def _with_horovod(value):
    return value
