"""Signals recorded, written once: the trainers' stop request and the
launchers' forwarding.

A trainer records only the first SIGTERM, SIGUSR1 (Slurm's warning) or
SIGINT: it finishes its step, the ranks agree on a stop step, rank 0 saves a
checkpoint. A repeated SIGTERM or SIGUSR1 changes nothing (Slurm signals a
task directly and through srun; its SIGKILL is the "now"); a second SIGINT
ends the process at once. The agreement carries which signal: every rank
exits with the code of the same one, whichever rank it reached. Standard
library only; Python 3.7-compatible."""
import os
import signal
import subprocess

HANDLED = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)
LAUNCHER_HANDLED = HANDLED + (signal.SIGHUP,)   # and its session gone


def passed_on(signum):
  """SIGHUP goes on as SIGTERM (a rank takes none); the rest as they came."""
  return signal.SIGTERM if signum == signal.SIGHUP else signum


def hold(signums=HANDLED):
  """Holds `signums` pending, across an exec, until a Recorder of them is
  installed: a process that starts would otherwise die of them."""
  signal.pthread_sigmask(signal.SIG_BLOCK, signums)


def blocked_start():
  """The argv prefix that execs a command with HANDLED held (hold()) until its
  Recorder installs, or none where `env` cannot (GNU coreutils < 8.31)."""
  argv = ["env", "--block-signal=" + ",".join(
      signal.Signals(signum).name[3:] for signum in HANDLED)]
  works = subprocess.run(argv + ["true"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL).returncode == 0
  return argv if works else []


def ignore(signums=HANDLED):
  """`signums` change nothing from now, in every thread (a mask is each
  thread's own): for a process whose work is done, as it exits."""
  for signum in signums:
    signal.signal(signum, signal.SIG_IGN)


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
    # One held (hold()) is delivered now.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, self.signums)
    return self

  def _record(self, signum, frame):
    del frame
    self.receive(signum)

  def receive(self, signum):
    """`signum` as if it came (one another handler took meanwhile)."""
    # Before it is recorded: react() sees what came earlier.
    self.react(signum)
    self.first = self.first or signum
    self.seen.add(signum)

  def react(self, signum):
    """What a signal does beyond being recorded: nothing here."""


class StopSignals(Recorder):
  """SIGTERM, SIGINT and SIGUSR1 as a trainer's request to stop cleanly."""

  # The stop agreement's order: one float per signal, by rising number.
  AGREEMENT_ORDER = tuple(sorted(HANDLED))

  def __init__(self, signums=HANDLED):
    super().__init__(signums)
    self.agreed = 0   # the signal the ranks agreed to stop for, or 0

  @property
  def requested(self):
    """The first signal's number, or 0."""
    return self.first

  def react(self, signum):
    if self.first and signum == signal.SIGINT:
      signal.signal(signum, signal.SIG_DFL)
      os.kill(os.getpid(), signum)

  def request(self):
    """This rank's part of the stop agreement: 1.0 for its first signal."""
    return [1.0 if signum == self.first else 0.0
            for signum in self.AGREEMENT_ORDER]

  def agree(self, agreement):
    """`agreement`: the ranks' request() summed or averaged, the same on
    every rank. Records the signal they stop for: the highest-numbered any
    rank received first, as srun reports its tasks' highest exit code.
    True: stop now."""
    received = [signum for signum, part in zip(self.AGREEMENT_ORDER,
                                               agreement) if part > 0]
    self.agreed = max(received, default=self.agreed)
    return bool(self.agreed)

  def exit_code(self):
    """128 + the signal the ranks agreed on, the same on every rank; else
    this rank's own; else SIGTERM's."""
    return 128 + (self.agreed or self.first or signal.SIGTERM)
