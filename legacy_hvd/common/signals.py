"""Signals recorded, written once: the trainers' stop request and the
launchers' forwarding.

A trainer records only the first SIGTERM, SIGUSR1 (Slurm's warning) or
SIGINT: it finishes its step, the ranks agree on a stop step, rank 0 saves a
checkpoint. A repeated SIGTERM or SIGUSR1 changes nothing (Slurm signals a
task directly and through srun; its SIGKILL is the "now"); a second SIGINT
ends the process at once. Standard library only; Python 3.7-compatible."""
import os
import signal

HANDLED = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)


class Recorder(object):
  """Records which of `signums` this process received; each signal also
  goes to react(), which a launcher overrides to pass it on."""

  def __init__(self, signums=HANDLED):
    self.signums = tuple(signums)
    self.first = 0      # the first signal's number, or 0
    self.seen = set()   # the number of every signal received

  def install(self):
    for signum in self.signums:
      signal.signal(signum, self._record)
    return self

  def _record(self, signum, frame):
    del frame
    # Before it is recorded: react() sees what came earlier.
    self.react(signum)
    self.first = self.first or signum
    self.seen.add(signum)

  def react(self, signum):
    """What a signal does beyond being recorded: nothing here."""


class StopSignals(Recorder):
  """SIGTERM, SIGINT and SIGUSR1 as a trainer's request to stop cleanly."""

  @property
  def requested(self):
    """The first signal's number, or 0."""
    return self.first

  def react(self, signum):
    if self.first and signum == signal.SIGINT:
      signal.signal(signum, signal.SIG_DFL)
      os.kill(os.getpid(), signum)

  @staticmethod
  def exit_code(signum):
    """128 + `signum`, the shell's convention; a rank stopped because the
    others agreed to (signum 0) exits as if by SIGTERM, the usual stop."""
    return 128 + (signum or signal.SIGTERM)
