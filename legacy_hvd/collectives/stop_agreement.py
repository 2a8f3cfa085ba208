"""The stop agreement: a stop request on any rank reaches every rank in the
same step, so all stop together and rank 0 checkpoints there. Ranks that
stopped at different steps would leave the others waiting in an allreduce."""


def agree(requested, size, average):
  """float32 scalar `requested` (1.0: this rank got a stop signal, else 0.0)
  -> its average over all ranks, > 0 on every rank once any asked: a
  one-float allreduce with no inputs from the step, so it overlaps it."""
  if size == 1:   # alone, a rank needs no agreement (nor Horovod)
    return requested
  # Horovod: a stop request on any rank reaches all ranks in the same step.
  return average(requested)
