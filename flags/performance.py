"""Flags for Horovod, GPU and CPU performance."""
from absl import flags


def define_performance(flag_values=flags.FLAGS):
  fv = {"flag_values": flag_values}
  flags.DEFINE_boolean(
      "fp16_allreduce", False, "Compress gradients to float16 for the "
      "allreduce (lossy; halves the bytes sent).", **fv)
  flags.DEFINE_integer(
      "backward_passes_per_step", 1, "Gradient accumulation: local batches "
      "whose gradients are averaged before each allreduce and update.", **fv)
  flags.DEFINE_boolean(
      "cpu_affinity", True, "Pin each local rank to its own share of the "
      "cores (the CPU counterpart of one GPU per rank). Turn off when the "
      "launcher binds ranks itself (mpirun --bind-to).", **fv)
  flags.DEFINE_boolean(
      "require_gpu", False, "Stop in one line when a rank sees no GPU "
      "(without it, a host without GPUs trains on the CPU). Any GPU host "
      "stops with fewer GPUs than ranks.", **fv)
  flags.DEFINE_integer(
      "intra_op_threads", 0, "TensorFlow threads per op in each process; 0: "
      "one per core of the rank's share of the cores.", **fv)
  flags.DEFINE_integer(
      "inter_op_threads", 0, "TensorFlow ops run at once in each process; 0 "
      "sizes it like --intra_op_threads.", **fv)
  flags.DEFINE_boolean(
      "horovod", True, "--nohorovod: plain TensorFlow, one process started "
      "with python (not horovodrun), the same graph without Horovod's ops: "
      "the baseline tools/benchmark.py measures Horovod's cost against.", **fv)

  flags.DEFINE_boolean(
      "deterministic", False, "Bitwise-repeatable runs: TensorFlow op "
      "determinism, and no Horovod tensor fusion (which can change the "
      "order in which ranks' gradients are summed). Costs speed.", **fv)

  flags.register_validator(
      "backward_passes_per_step", lambda v: v >= 1,
      message="--backward_passes_per_step must be a positive integer", **fv)
  @flags.multi_flags_validator(
      ["horovod", "backward_passes_per_step"],
      message="--nohorovod needs --backward_passes_per_step=1 (gradient "
      "accumulation is Horovod's DistributedOptimizer's)", **fv)
  def _accumulation_needs_horovod(values):
    return values["horovod"] or values["backward_passes_per_step"] == 1

  for name in ("intra_op_threads", "inter_op_threads"):
    flags.register_validator(
        name, lambda v: v >= 0,
        message=f"--{name} must be 0 (automatic) or a positive integer", **fv)
