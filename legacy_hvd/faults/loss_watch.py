"""The lost-host watch: one surviving rank names what the job lost, in one
line, and every rank ends with the same exit code. A survivor blocked in a
collective runs no Python signal handler until it returns (after
horovodrun's SIGKILL), so a thread woken through signal.set_wakeup_fd probes."""
import concurrent.futures
import os
import queue
import signal
import socket
import sys
import threading
import time

from legacy_hvd.common import model_dir_claim
from legacy_hvd.faults import keepers
from legacy_hvd.faults import probes

GLOO_TIMEOUT_SECONDS = 30.0   # Horovod's default HOROVOD_GLOO_TIMEOUT_SECONDS


class LossWatch:
  """The first survivor reports and ends with `exit_code`; the others wait.
  Nothing happens once `stand_down()` is true (this rank is ending for a
  reason it reported). An uncaught error tells the others first (a
  sys.excepthook), so they name it rather than fail in tracebacks."""

  def __init__(self, roster, report, exit_code, head_start,
               stand_down=lambda: False):
    self._roster = roster
    self._report = report
    self._exit_code = exit_code
    self._head_start = head_start
    self._stand_down = stand_down
    self._once = threading.Lock()

  def start(self):
    """From the main thread: watches for stop signals and uncaught errors."""
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
    """This rank answers probes FAILED from now on and tells the others at once
    (a probe after it ended could only say it ended), so that they name it."""
    roster = self._roster
    roster.server.answer_failed()
    notice = probes.FAILED_NOTICE + str(roster.rank).encode() + b"\n"
    others = [peer for r, peer in enumerate(roster.ranks) if r != roster.rank]
    with concurrent.futures.ThreadPoolExecutor(max(1, len(others))) as pool:
      list(pool.map(lambda peer: probes.tell(peer.address, peer.port, notice),
                    others))

  def wait_others_gone(self, seconds):
    """Until the other ranks have ended, at most `seconds`."""
    self._roster.wait_others_gone(seconds)

  def _watch(self, read_end):
    # Only the first signal (horovodrun's stop after a rank died): a later
    # one, as a second Ctrl-C, must not be taken for a lost host.
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
        # Exit only once the others have seen the loss too: one stopped
        # before its own probe would find this rank gone and report again.
        others = len(self._roster.ranks) - len(lost) - 1
        self._await_acknowledgements(others, wait)
        # Last: once a stuck rank is killed the launcher stops the others.
        keepers.end_stuck(self._roster.ranks, lost)
        break
      # Stay alive (answering probes) while the reporter may still be
      # probing, or be reported lost too; a reporter that died before it
      # reported is lost too: probe again.
      deadline = time.monotonic() + wait
      if self._acknowledge(reporter, wait):
        time.sleep(max(0.0, deadline - time.monotonic()))
        break
    sys.stderr.flush()
    sys.stdout.flush()
    model_dir_claim.release()   # os._exit skips atexit's
    # Not sys.exit: this may be the watcher thread, and the main thread may
    # be blocked in a collective that nobody will complete.
    os._exit(self._exit_code)

  def _acknowledge(self, reporter, seconds):
    """Tells `reporter` this rank saw the loss too, then waits up to `seconds`
    for its word that it reported; False if it ended without it (died too)."""
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
    """The reporter: answers up to `count` acknowledgements, for `seconds` at
    most."""
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
