"""Flags for Horovod and CPU performance.

    define_performance()   # registers the flags below and their validators
"""
from absl import flags


def define_performance(flag_values=flags.FLAGS):
  fv = {"flag_values": flag_values}
  flags.DEFINE_boolean(
      "fp16_allreduce", False, "Compress gradients to float16 for the "
      "allreduce (lossy; halves the bytes sent).", **fv)
  flags.DEFINE_integer(
      "backward_passes_per_step", 1, "Gradient accumulation: local batches "
      "whose gradients are averaged before each allreduce and update.", **fv)
  flags.DEFINE_integer(
      "intra_op_threads", 0, "TensorFlow threads per op in each process; 0 "
      "divides the machine's cores between the local ranks.", **fv)
  flags.DEFINE_integer(
      "inter_op_threads", 0, "TensorFlow ops run at once in each process; 0 "
      "sizes it like --intra_op_threads.", **fv)

  flags.DEFINE_boolean(
      "deterministic", False, "Bitwise-repeatable runs: TensorFlow op "
      "determinism, and no Horovod tensor fusion (which can change the "
      "order in which ranks' gradients are summed). Costs speed.", **fv)

  flags.register_validator(
      "backward_passes_per_step", lambda v: v >= 1,
      message="--backward_passes_per_step must be a positive integer", **fv)
  for name in ("intra_op_threads", "inter_op_threads"):
    flags.register_validator(
        name, lambda v: v >= 0,
        message=f"--{name} must be 0 (automatic) or a positive integer", **fv)
