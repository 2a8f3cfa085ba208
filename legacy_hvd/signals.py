"""SIGTERM, SIGUSR1 and SIGINT as a request to stop cleanly.

    stop = StopSignals().install()
    ...
    if stop.requested: ...        # the first signal's number, or 0

A cluster stops a job with SIGTERM (a time limit, a pre-emption, scancel),
a scheduler warns with SIGUSR1 before it does (Slurm's `--signal=USR1@N`;
the job then requeues itself, legacy_hvd/slurm.py), and a user presses
Ctrl-C. The first one only records the request: the trainer finishes its
step, agrees with the other ranks to stop at the same step, and rank 0
saves a checkpoint. A repeated SIGTERM or SIGUSR1 is the same request
again (Slurm signals a task directly and through srun): it changes
nothing, and the scheduler's SIGKILL after its grace time is the "now". A
second SIGINT (a user's second Ctrl-C) restores the default action and
re-raises, ending the process at once.
"""
import os
import signal

HANDLED = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)


class StopSignals:

  def __init__(self):
    self.requested = 0

  def install(self):
    for signum in HANDLED:
      signal.signal(signum, self._handle)
    return self

  def _handle(self, signum, frame):
    del frame
    if self.requested and signum == signal.SIGINT:
      signal.signal(signum, signal.SIG_DFL)
      os.kill(os.getpid(), signum)
    if not self.requested:
      self.requested = signum

  @staticmethod
  def exit_code(signum):
    """The shell's convention for a process ended by `signum`. A rank that
    stopped because the others agreed to (no signal of its own: 0) exits as
    one stopped by SIGTERM, the usual stop, not with 128."""
    return 128 + (signum or signal.SIGTERM)
