"""The stop agreement: a stop request on any rank reaches every rank in the
same step.

    any_stop = stop_agreement.agree(requested, size, collectives.average)

Each rank feeds 1.0 when it got a stop signal (common.signals), else 0.0;
the average over all ranks is non-zero on every rank in the same step, so
all stop together and rank 0 checkpoints there. Ranks that stopped at
different steps would leave the others waiting in an allreduce. The TF1
jobs run it through hooks.StopRequestHook, the TF2 trainers in their step.
"""


def agree(requested, size, average):
  """float32 scalar `requested` (1.0: this rank got a stop signal, else 0.0)
  -> its average over all ranks, > 0 on every rank in the same step once
  any rank asked. In a graph (fed through a placeholder), eagerly or in a
  tf.function: a one-float allreduce with no inputs from the step, so it
  overlaps the step's compute."""
  if size == 1:   # alone, a rank needs no agreement (nor Horovod)
    return requested
  # Horovod: a stop request on any rank reaches all ranks in the same step
  # (average: the trainer's collectives', Horovod's or the strategy's).
  return average(requested)
