"""The lost-host watch: one surviving rank names what the job lost, in one
line, and every rank ends with the same exit code.

Two things notice a lost host. A collective fails on a survivor (Gloo's
time-out for a cut cable, a closed connection for killed ranks): the main
thread calls LossWatch.check(). Or the launcher, which stops every rank
(SIGTERM) once one rank's process has ended, reaches a survivor still
blocked in a collective, where Python runs no signal handler until the
collective returns (up to the Gloo time-out, later than horovodrun's
SIGKILL): LossWatch's thread, woken through signal.set_wakeup_fd, probes at
once. Whichever comes first reports, once per process. A stuck rank ends
no process and breaks no connection: every collective waits for it until
Gloo's time-out fails it on the others, so a stuck rank is named at most
HOROVOD_GLOO_TIMEOUT_SECONDS and one probe after it stopped.
"""
import concurrent.futures
import os
import queue
import signal
import socket
import sys
import threading
import time

from legacy_hvd.faults import keepers
from legacy_hvd.faults import probes

GLOO_TIMEOUT_SECONDS = 30.0   # Horovod's default HOROVOD_GLOO_TIMEOUT_SECONDS


class LossWatch:
  """When ranks are lost, the first survivor calls report(lost) (which
  prints), waits until every other survivor has acknowledged the loss (it
  connects and sends ACK; the reporter answers REPORTED), and ends with
  `exit_code`; the others wait for it (a Gloo time-out, a probe and
  `head_start` seconds at most: the launcher stops them once the reporter
  exits), then end with the same code. A reporter that ends without
  answering died too (Gloo can abort a rank whose peers died in the same
  collective): the others probe again and the next survivor reports. The
  reporter has the keepers of stuck ranks kill them before it ends. The
  watcher does nothing once `stand_down()` is true: this rank is already
  ending for a reason it reported (a NaN, say), and the ranks that ended
  first did not die, they stopped. A rank that an uncaught error ends
  tells the others so before its traceback prints and Horovod shuts down
  (a sys.excepthook), so they name it rather than fail on in tracebacks
  of their own.

  roster: the gathered roster.Roster."""

  def __init__(self, roster, report, exit_code, head_start,
               stand_down=lambda: False):
    self._roster = roster
    self._report = report
    self._exit_code = exit_code
    self._head_start = head_start
    self._stand_down = stand_down
    self._once = threading.Lock()

  def start(self):
    """Watches for the launcher's stop signals and for an uncaught error
    (call from the main thread)."""
    raised = sys.excepthook

    def mark_failed_then_print(*error):
      self.mark_failed()
      raised(*error)
    sys.excepthook = mark_failed_then_print
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end)
    thread = threading.Thread(target=self._watch, args=(read_end,),
                              name="lost-peer-watch", daemon=True)
    thread.start()
    return self

  def mark_failed(self):
    """An error ends this rank (one it reported itself, or one nobody
    caught): from now on it answers probes FAILED, and it tells every other
    rank so at once (a probe after its process has ended could only say
    that it ended), so that they name it."""
    roster = self._roster
    roster.server.answer_failed()
    notice = probes.FAILED_NOTICE + str(roster.rank).encode() + b"\n"
    others = [peer for r, peer in enumerate(roster.ranks) if r != roster.rank]
    with concurrent.futures.ThreadPoolExecutor(max(1, len(others))) as pool:
      list(pool.map(lambda peer: probes.tell(peer.address, peer.port, notice),
                    others))

  def wait_others_gone(self, seconds):
    """After the job's end: until the other ranks have ended, at most
    `seconds` (Roster.wait_others_gone)."""
    self._roster.wait_others_gone(seconds)

  def _watch(self, read_end):
    # Only the first signal: horovodrun's stop after a rank died is the
    # first a survivor gets. A later one (a user's second Ctrl-C, or
    # horovodrun ending a job that is stopping cleanly) must not be taken
    # for a lost host.
    os.read(read_end, 1)
    if not self._stand_down():
      self.check()

  def check(self):
    """Probes the other ranks: returns False if all answer, else ends this
    process (from whichever thread gets here first; a second one waits)."""
    if not self._once.acquire(blocking=False):
      threading.Event().wait()   # the other thread is ending the process
    wait = _reporter_wait(self._head_start)
    while True:
      lost = self._roster.lost()
      if not lost:
        self._once.release()
        return False
      reporter = self._roster.first_alive(lost)
      if self._roster.rank == reporter:
        self._report(lost)
        # Exit only once the other survivors have seen the loss too: the
        # launcher stops them when this rank exits, and one stopped before
        # its own probe would find this rank gone and report a second time.
        others = len(self._roster.ranks) - len(lost) - 1
        self._await_acknowledgements(others, wait)
        # Last: once a stuck rank is killed the launcher stops the others.
        keepers.end_stuck(self._roster.ranks, lost)
        break
      # Stay alive (answering probes) while the reporter may still be
      # waiting out its own collective and probing: a survivor that left
      # first would be reported lost too. The launcher ends this rank as
      # soon as the reporter exits. A reporter that died before it
      # reported is lost too: probe again.
      deadline = time.monotonic() + wait
      if self._acknowledge(reporter, wait):
        time.sleep(max(0.0, deadline - time.monotonic()))
        break
    sys.stderr.flush()
    sys.stdout.flush()
    # Not sys.exit: this may be the watcher thread, and the main thread may
    # be blocked in a collective that nobody will complete.
    os._exit(self._exit_code)

  def _acknowledge(self, reporter, seconds):
    """Tells rank `reporter` that this rank saw the loss too and stays
    quiet, then waits up to `seconds` for its word that it has reported.
    False if the reporter ended without that word: it died too (a Gloo
    abort in the same failed collective, say), so the loss is this rank's
    to report."""
    try:
      peer = self._roster.ranks[reporter]
      with socket.create_connection((peer.address, peer.port),
                                    timeout=probes.PROBE_SECONDS) as connection:
        connection.sendall(probes.ACK)
        connection.settimeout(seconds)
        return connection.recv(1) == probes.REPORTED
    except socket.timeout:   # still busy: it reports later or not at all
      return True
    except OSError:          # refused or reset: its process ended
      return False

  def _await_acknowledgements(self, count, seconds):
    """The reporter, once it has printed: waits until `count` ranks
    acknowledged, for `seconds` at most, and answers each that the loss is
    reported."""
    deadline = time.monotonic() + seconds
    seen = 0
    while seen < count:
      try:
        connection = self._roster.server.acknowledgements.get(
            timeout=max(0.01, deadline - time.monotonic()))
      except queue.Empty:
        break
      with connection:
        try:
          connection.sendall(probes.REPORTED)
          seen += 1
        except OSError:
          pass
    return seen


def _reporter_wait(head_start):
  """Seconds until the reporter has surely printed: it notices the loss at
  most one Gloo time-out after this rank, then probes, then prints."""
  gloo = float(os.environ.get("HOROVOD_GLOO_TIMEOUT_SECONDS",
                              GLOO_TIMEOUT_SECONDS))
  return gloo + probes.PROBE_SECONDS + head_start
