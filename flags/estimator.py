"""Flags only the Estimator job has.

    define_estimator()   # registers --eval_every_n_steps; refuses --nohorovod
"""
from absl import flags


def define_estimator(flag_values=flags.FLAGS):
  flags.DEFINE_integer(
      "eval_every_n_steps", 0, "Evaluate on the test set every this many "
      "global steps (Estimator.train, then Estimator.evaluate, on every "
      "rank); 0: once, at the end.", lower_bound=0, flag_values=flag_values)

  @flags.validator("horovod", message="--nohorovod is a mode of "
                   "legacy_hvd.train only; the Estimator job always runs "
                   "Horovod", flag_values=flag_values)
  def _with_horovod(value):
    return value
