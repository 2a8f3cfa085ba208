"""Where every rank runs, and which host a job lost when a collective fails.

    roster = Roster.listen(rank)                  # before the gather
    roster.gather(allgather_rows)                 # collective, at start-up
    roster.hosts()                                # {"lh1": [0, 1], "lh2": [2, 3]}
    lost = roster.lost()                          # after a collective failed
    roster.first_alive(lost)                      # the survivor that reports
    roster.describe(lost)                         # "host lh2 (ranks 2, 3: ...)"
    watch = LossWatch(roster, report, exit_code, head_start,
                      stand_down).start()
    watch.check()       # after a collective failed: False, or ends the process

Each rank listens on a TCP port of its host's address and never accepts on
it. While the rank's process lives, the kernel completes connections to the
port by itself; once the process has died, its host refuses them at once;
when the host is unreachable (its cable cut, the machine down), they time
out. So after a failed allreduce a surviving rank can tell which ranks are
gone and on which host, with nothing added to the training loop.
The gather is one allgather of a few bytes per rank; `allgather_rows` is
given by the entry point (this module does not import Horovod).

Two things notice a lost host. A collective fails on a survivor (Gloo's
time-out for a cut cable, a closed connection for killed ranks): the main
thread calls LossWatch.check(). Or the launcher, which stops every rank
(SIGTERM) once one rank's process has ended, reaches a survivor still
blocked in a collective, where Python runs no signal handler until the
collective returns (up to the Gloo time-out, later than horovodrun's
SIGKILL): LossWatch's thread, woken through signal.set_wakeup_fd, probes at
once. Whichever comes first reports, once per process.
"""
import concurrent.futures
import json
import os
import signal
import socket
import sys
import threading
import time

import numpy as np

ROW_BYTES = 256         # one rank's JSON record, zero-padded
PROBE_SECONDS = 3.0     # a host that does not answer a connect in this is gone
GLOO_TIMEOUT_SECONDS = 30.0   # Horovod's default HOROVOD_GLOO_TIMEOUT_SECONDS
GONE, UNREACHABLE = "ended", "unreachable"
ACK = b"!"              # a survivor's "I saw it too" to the reporting rank
REPORTED = b"."         # the reporter's answer: "I have printed the loss"


def host_name():
  """This machine's hostname: what the start line and errors call it."""
  return socket.gethostname()


class Roster:

  def __init__(self, rank, listener, address):
    self.rank = rank
    self._listener = listener
    self._address = address
    self.ranks = []      # [(host, address, port)] indexed by rank

  @classmethod
  def listen(cls, rank):
    """Opens this rank's port on the address its hostname resolves to (the
    address Horovod's Gloo uses too); without one, on loopback."""
    try:
      address = socket.gethostbyname(host_name())
    except OSError:
      address = "127.0.0.1"
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((address, 0))
    listener.listen(64)
    return cls(rank, listener, address)

  def record(self):
    """This rank's row: uint8 [ROW_BYTES], JSON of (host, address, port)."""
    text = json.dumps([host_name(), self._address,
                       self._listener.getsockname()[1]]).encode()
    row = np.zeros([ROW_BYTES], np.uint8)
    row[:len(text)] = np.frombuffer(text, np.uint8)
    return row

  def gather(self, allgather_rows):
    """allgather_rows(row uint8 [ROW_BYTES]) -> uint8 [size, ROW_BYTES]."""
    rows = allgather_rows(self.record())
    self.ranks = [tuple(json.loads(bytes(row).rstrip(b"\0").decode()))
                  for row in rows]
    return self

  def hosts(self):
    """{host: [ranks]} in rank order."""
    found = {}
    for rank, (host, _, _) in enumerate(self.ranks):
      found.setdefault(host, []).append(rank)
    return found

  def lost(self):
    """{rank: GONE or UNREACHABLE} for every other rank that does not answer."""
    others = [r for r in range(len(self.ranks)) if r != self.rank]
    with concurrent.futures.ThreadPoolExecutor(max(1, len(others))) as pool:
      states = list(pool.map(lambda r: _probe(*self.ranks[r][1:]), others))
    return {r: state for r, state in zip(others, states) if state}

  def first_alive(self, lost):
    """The lowest rank not in `lost`: the one survivor that reports."""
    return min(r for r in range(len(self.ranks)) if r not in lost)

  def describe(self, lost):
    """'host lh2 (ranks 2, 3: processes ended)' for each host whose ranks
    are all lost, then 'rank 1 of 2 on host lh1 (...)' for a part of a
    host (a rank that died of the loss, say: its host is still up)."""
    whole, part = [], []
    for host, ranks in self.hosts().items():
      gone = [r for r in ranks if r in lost]
      if not gone:
        continue
      states = sorted({lost[r] for r in gone})
      what = (("process ended" if len(gone) == 1 else "processes ended")
              if states == [GONE] else
              "host unreachable" if states == [UNREACHABLE] else
              "processes ended or unreachable")
      listed = "rank{} {}".format("s" if len(gone) > 1 else "",
                                  ", ".join(map(str, gone)))
      if len(gone) == len(ranks):
        whole.append("host {} ({}: {})".format(host, listed, what))
      else:
        part.append("{} of {} on host {} ({})".format(listed, len(ranks),
                                                      host, what))
    return "; ".join(whole + part)

  def acknowledge(self, reporter, seconds):
    """Tells rank `reporter` that this rank saw the loss too and stays
    quiet, then waits up to `seconds` for its word that it has reported.
    False if the reporter ended without that word: it died too (a Gloo
    abort in the same failed collective, say), so the loss is this rank's
    to report."""
    try:
      with socket.create_connection(self.ranks[reporter][1:],
                                    timeout=PROBE_SECONDS) as connection:
        connection.sendall(ACK)
        connection.settimeout(seconds)
        return connection.recv(1) == REPORTED
    except socket.timeout:   # still busy: it reports later or not at all
      return True
    except OSError:          # refused or reset: its process ended
      return False

  def await_acknowledgements(self, count, seconds):
    """The reporter, once it has printed: accepts until `count` ranks
    acknowledged (probes, which close without a byte, do not count), for
    `seconds` at most, and answers each that the loss is reported."""
    deadline = time.monotonic() + seconds
    seen = 0
    while seen < count and time.monotonic() < deadline:
      self._listener.settimeout(max(0.01, deadline - time.monotonic()))
      try:
        connection, _ = self._listener.accept()
      except OSError:   # timed out
        break
      with connection:
        connection.settimeout(PROBE_SECONDS)
        try:
          if connection.recv(1) == ACK:
            seen += 1
            connection.sendall(REPORTED)
        except OSError:
          pass
    return seen

  def close(self):
    self._listener.close()


def _reporter_wait(head_start):
  """Seconds until the reporter has surely printed: it notices the loss at
  most one Gloo time-out after this rank, then probes, then prints."""
  gloo = float(os.environ.get("HOROVOD_GLOO_TIMEOUT_SECONDS",
                              GLOO_TIMEOUT_SECONDS))
  return gloo + PROBE_SECONDS + head_start


def _probe(address, port):
  """None if the rank at address:port answers, else GONE or UNREACHABLE."""
  try:
    with socket.create_connection((address, port), timeout=PROBE_SECONDS):
      return None
  except ConnectionRefusedError:
    return GONE
  except OSError:   # timed out, no route, network down
    return UNREACHABLE


class LossWatch:
  """When ranks are lost, the first survivor calls report(lost) (which
  prints), waits until every other survivor has acknowledged the loss (it
  connects and sends ACK; the reporter answers REPORTED), and ends with
  `exit_code`; the others wait for it (a Gloo time-out, a probe and
  `head_start` seconds at most: the launcher stops them once the reporter
  exits), then end with the same code. A reporter that ends without
  answering died too (Gloo can abort a rank whose peers died in the same
  collective): the others probe again and the next survivor reports. The
  watcher does nothing once `stand_down()` is true: this rank is already
  ending for a reason it reported (a NaN, say), and the ranks that ended
  first did not die, they stopped."""

  def __init__(self, roster, report, exit_code, head_start,
               stand_down=lambda: False):
    self._roster = roster
    self._report = report
    self._exit_code = exit_code
    self._head_start = head_start
    self._stand_down = stand_down
    self._once = threading.Lock()

  def start(self):
    """Watches for the launcher's stop signals (call from the main thread)."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end)
    thread = threading.Thread(target=self._watch, args=(read_end,),
                              name="lost-peer-watch", daemon=True)
    thread.start()
    return self

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
        self._roster.await_acknowledgements(others, wait)
        break
      # Stay alive (answering probes) while the reporter may still be
      # waiting out its own collective and probing: a survivor that left
      # first would be reported lost too. The launcher ends this rank as
      # soon as the reporter exits. A reporter that died before it
      # reported is lost too: probe again.
      deadline = time.monotonic() + wait
      if self._roster.acknowledge(reporter, wait):
        time.sleep(max(0.0, deadline - time.monotonic()))
        break
    sys.stderr.flush()
    sys.stdout.flush()
    # Not sys.exit: this may be the watcher thread, and the main thread may
    # be blocked in a collective that nobody will complete.
    os._exit(self._exit_code)
