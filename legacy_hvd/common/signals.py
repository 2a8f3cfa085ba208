"""Signals recorded, written once: the trainers' stop request and the
launchers' forwarding.

    stop = StopSignals().install()   # a trainer
    ...
    if stop.requested: ...        # the first signal's number, or 0
    received = Recorder((signal.SIGUSR1, signal.SIGTERM)).install()
    received.first, received.seen # the first one's number (0: none), all
    class Forwarded(Recorder):    # a launcher: also passes each one on
      def react(self, signum): ...

A cluster stops a job with SIGTERM (a time limit, a pre-emption, scancel),
a scheduler warns with SIGUSR1 before it does (Slurm's `--signal=USR1@N`;
the job then requeues itself, legacy_hvd/launch/slurm.py), and a user presses
Ctrl-C. In a trainer the first one only records the request: the trainer
finishes its step, agrees with the other ranks to stop at the same step,
and rank 0 saves a checkpoint. A repeated SIGTERM or SIGUSR1 is the same
request again (Slurm signals a task directly and through srun): it changes
nothing, and the scheduler's SIGKILL after its grace time is the "now". A
second SIGINT (a user's second Ctrl-C) restores the default action and
re-raises, ending the process at once. The launchers (legacy_hvd.launch.slurm,
legacy_hvd.launch.supervise) record the same way and pass signals on to the job
they run. Standard library only; Python 3.7-compatible.
"""
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
    """The shell's convention for a process ended by `signum`. A rank that
    stopped because the others agreed to (no signal of its own: 0) exits as
    one stopped by SIGTERM, the usual stop, not with 128."""
    return 128 + (signum or signal.SIGTERM)
