"""Flags only the Estimator job has: none; it refuses what it cannot run
(--nohorovod).
"""
from absl import flags


def define_estimator(flag_values=flags.FLAGS):
  @flags.validator("horovod", message="--nohorovod is a mode of "
                   "legacy_hvd.train only; the Estimator job always runs "
                   "Horovod", flag_values=flag_values)
  def _with_horovod(value):
    return value
