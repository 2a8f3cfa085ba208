"""The stop agreement: a stop request on any rank reaches every rank in the
same step, so all stop together and rank 0 checkpoints there. Ranks that
stopped at different steps would leave the others waiting in an allreduce."""


def agree(requested, size, average):
  """float32 [3] `requested` (StopSignals.request(): 1.0 for the stop signal
  this rank got first) -> its average over all ranks, the same on every
  rank, > 0 where any rank asked (StopSignals.agree reads it): a three-float
  allreduce with no inputs from the step, so it overlaps it."""
  if size == 1:   # alone, a rank needs no agreement (nor Horovod)
    return requested
  # Horovod: a stop request on any rank reaches all ranks in the same step.
  return average(requested)
