"""Flags only the tf.distribute path has; it refuses Horovod-only settings."""
from absl import flags

from flags import tf2

# Seconds a collective may wait for a peer before it fails (tf.distribute's
# CommunicationOptions timeout): what Gloo's HOROVOD_GLOO_TIMEOUT_SECONDS is
# to the Horovod jobs (30 s by default there too). Without one, a worker
# that stops answering leaves the others waiting for ever.
COLLECTIVE_TIMEOUT = 30


def define_mwms(flag_values=flags.FLAGS):
  fv = {"flag_values": flag_values}
  flags.DEFINE_enum(
      "optimizer_impl", "v1", tf2.OPTIMIZER_IMPLS, "v1: the tf.compat.v1."
      "train optimizer the TF1 path uses, run eagerly (same numbers as "
      "TF1); keras: the tf.keras optimizer a TF2 user would pick.", **fv)
  flags.DEFINE_integer(
      "collective_timeout", COLLECTIVE_TIMEOUT, "Seconds a collective waits "
      "for the other workers before the step fails (tf.distribute's "
      "CommunicationOptions.timeout_seconds; Gloo's time-out under "
      "Horovod).", **fv)
  flags.register_validator(
      "collective_timeout", lambda value: value >= 1,
      message="--collective_timeout must be a positive number of seconds",
      **fv)

  @flags.validator("backward_passes_per_step",
                   message="--backward_passes_per_step must be 1 in the "
                   "tf.distribute path; use legacy_hvd.train for gradient "
                   "accumulation", **fv)
  def _no_accumulation(value):
    return value == 1

  @flags.validator("horovod", message="--nohorovod is a mode of "
                   "legacy_hvd.train only; legacy_hvd.train_mwms runs no "
                   "Horovod in any case", **fv)
  def _with_horovod(value):
    return value

  @flags.validator("fp16_allreduce", message="--fp16_allreduce is Horovod's "
                   "compression; tf.distribute's collectives send float32",
                   **fv)
  def _no_compression(value):
    return not value
