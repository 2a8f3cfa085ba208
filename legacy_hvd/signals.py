"""SIGTERM and SIGINT as a request to stop cleanly, a second one as "now".

    stop = StopSignals().install()
    ...
    if stop.requested: ...        # the signal number, or 0

A cluster stops a job with SIGTERM and a user with Ctrl-C. The first one only
records the request: the trainer finishes its step, agrees with the other
ranks to stop at the same step, and rank 0 saves a checkpoint. A second one
restores the default action and re-raises, ending the process at once.
"""
import os
import signal

HANDLED = (signal.SIGTERM, signal.SIGINT)


class StopSignals:

  def __init__(self):
    self.requested = 0

  def install(self):
    for signum in HANDLED:
      signal.signal(signum, self._handle)
    return self

  def _handle(self, signum, frame):
    del frame
    if self.requested:
      signal.signal(signum, signal.SIG_DFL)
      os.kill(os.getpid(), signum)
    self.requested = signum

  @staticmethod
  def exit_code(signum):
    """The shell's convention for a process ended by `signum`."""
    return 128 + signum
