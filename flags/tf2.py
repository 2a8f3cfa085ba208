"""Flags only the TF2 path has; it refuses TF1-only settings."""
from absl import flags

OPTIMIZER_IMPLS = ("v1", "keras")


def define_tf2(flag_values=flags.FLAGS):
  flags.DEFINE_enum(
      "optimizer_impl", "v1", OPTIMIZER_IMPLS, "v1: the tf.compat.v1.train "
      "optimizer the TF1 path uses, run eagerly (same numbers as TF1); "
      "keras: the tf.keras optimizer a TF2 user would pick.",
      flag_values=flag_values)

  @flags.validator("backward_passes_per_step",
                   message="--backward_passes_per_step must be 1 in the TF2 "
                   "path (hvd.DistributedGradientTape does not accumulate); "
                   "use legacy_hvd.train for gradient accumulation",
                   flag_values=flag_values)
  def _no_accumulation(value):
    return value == 1

  @flags.validator("horovod", message="--nohorovod is a mode of "
                   "legacy_hvd.train only; the TF2 path always runs Horovod",
                   flag_values=flag_values)
  def _with_horovod(value):
    return value
