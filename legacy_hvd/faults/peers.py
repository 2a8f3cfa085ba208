"""Where every rank runs, and which host a job lost when a collective fails.

    roster = Roster.listen(rank)                  # before the gather
    roster.gather(allgather_rows)                 # collective, at start-up
    roster.hosts()                                # {"lh1": [0, 1], "lh2": [2, 3]}
    lost = roster.lost()                          # after a collective failed
    roster.first_alive(lost)                      # the survivor that reports
    roster.describe(lost)                         # "host lh2 (ranks 2, 3: ...)"
    roster.end_stuck(lost)                        # their keepers kill them
    watch = LossWatch(roster, report, exit_code, head_start,
                      stand_down).start()
    watch.check()       # after a collective failed: False, or ends the process
    watch.mark_failed() # this rank ends for an error it reported itself

Each rank listens on a TCP port of its host's address, where a thread of
the rank answers every probe (PING) with a byte (ALIVE, or FAILED once an
exception nobody caught is ending the rank, which then tells the others
too). Once the rank's process has
died, its host refuses connections at once; when the host is unreachable
(its cable cut, the machine down), they time out; when the process is
stopped (SIGSTOP) or stuck, the kernel still completes the connection but
no answer comes. So after a failed allreduce a surviving rank can tell
which ranks are gone, stuck or failed, and on which host, with nothing
added to the training loop. A stuck rank cannot end itself: beside every
rank runs its keeper (legacy_hvd/faults/stuck_rank_killer.py), which the
reporting survivor asks to kill it, so nothing of the job stays on its host.
The gather is one allgather of a few bytes per rank; `allgather_rows` is
given by the entry point (this module does not import Horovod).

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
import collections
import concurrent.futures
import json
import os
import queue
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np

from legacy_hvd.faults import stuck_rank_killer

ROW_BYTES = 256         # one rank's JSON record, zero-padded
PROBE_SECONDS = 3.0     # a host that does not answer a connect in this is gone
GLOO_TIMEOUT_SECONDS = 30.0   # Horovod's default HOROVOD_GLOO_TIMEOUT_SECONDS
GONE, UNREACHABLE = "ended", "unreachable"
STOPPED, FAILED = "stopped", "failed"
PING = b"?"             # a probe: "are you running?"
ALIVE = b"+"            # the answer of a rank that runs
FAILED_ANSWER = b"x"    # the answer of a rank that an uncaught error ends
FAILED_NOTICE = b"f"    # its word to the others, then its rank and "\n"
NOTICE_SECONDS = 1.0    # for each notice: a stuck peer must not delay the end
ACK = b"!"              # a survivor's "I saw it too" to the reporting rank
REPORTED = b"."         # the reporter's answer: "I have printed the loss"
# What the one line says of ranks lost each way (one rank, several).
STATE_WORDS = {
    GONE: ("process ended", "processes ended"),
    UNREACHABLE: ("host unreachable", "host unreachable"),
    STOPPED: ("not answering: stopped or stuck",
              "not answering: stopped or stuck"),
}

# This process's keeper and the write end of its pipe, held for the
# process's lifetime (the pipe's end-of-file tells the keeper it ended).
_keepers = []

# Where a rank runs and how to reach it and its keeper.
Peer = collections.namedtuple(
    "Peer", ["host", "address", "port", "keeper_port", "token"])


def host_name():
  """This machine's hostname: what the start line and errors call it."""
  return socket.gethostname()


class Roster:

  def __init__(self, rank, listener, address, keeper):
    self.rank = rank
    self._listener = listener
    self._address = address
    self._keeper = keeper    # (keeper port, token)
    self._failed = False
    self._told_failed = set()   # ranks that said an uncaught error ends them
    self._acknowledgements = queue.Queue()
    self.ranks = []      # [Peer] indexed by rank

  @classmethod
  def listen(cls, rank):
    """Opens this rank's port on the address its hostname resolves to (the
    address Horovod's Gloo uses too; without one, on loopback), answers
    probes there from a thread, and starts the rank's keeper."""
    try:
      address = socket.gethostbyname(host_name())
    except OSError:
      address = "127.0.0.1"
    listener = _listening_socket(address)
    roster = cls(rank, listener, address, _start_keeper(address))
    threading.Thread(target=roster._answer, name="peer-answer",
                     daemon=True).start()
    return roster

  def peer(self):
    """This rank's Peer: where it runs, its port and its keeper's."""
    return Peer(host_name(), self._address, self._listener.getsockname()[1],
                *self._keeper)

  def record(self):
    """This rank's row: uint8 [ROW_BYTES], JSON of its Peer."""
    text = json.dumps(list(self.peer())).encode()
    row = np.zeros([ROW_BYTES], np.uint8)
    row[:len(text)] = np.frombuffer(text, np.uint8)
    return row

  def gather(self, allgather_rows):
    """allgather_rows(row uint8 [ROW_BYTES]) -> uint8 [size, ROW_BYTES]."""
    rows = allgather_rows(self.record())
    self.ranks = [Peer(*json.loads(bytes(row).rstrip(b"\0").decode()))
                  for row in rows]
    return self

  def hosts(self):
    """{host: [ranks]} in rank order."""
    found = {}
    for rank, peer in enumerate(self.ranks):
      found.setdefault(peer.host, []).append(rank)
    return found

  def mark_failed(self):
    """An uncaught error ends this rank: from now on it answers probes
    FAILED, and it tells every other rank so at once (a probe after its
    process has ended could only say that it ended)."""
    self._failed = True
    notice = FAILED_NOTICE + str(self.rank).encode() + b"\n"
    others = [peer for r, peer in enumerate(self.ranks) if r != self.rank]
    with concurrent.futures.ThreadPoolExecutor(max(1, len(others))) as pool:
      list(pool.map(lambda peer: _tell(peer, notice), others))

  def _answer(self):
    """The rank's side of probes and acknowledgements, for its lifetime."""
    while True:
      try:
        connection, _ = self._listener.accept()
      except OSError:   # closed
        return
      threading.Thread(target=self._answer_one, args=(connection,),
                       daemon=True).start()

  def _answer_one(self, connection):
    connection.settimeout(PROBE_SECONDS)
    try:
      asked = connection.recv(1)
      if asked == PING:
        connection.sendall(FAILED_ANSWER if self._failed else ALIVE)
      elif asked == ACK:   # answered once this rank has reported
        self._acknowledgements.put(connection)
        return
      elif asked == FAILED_NOTICE:
        self._told_failed.add(int(connection.makefile("rb").readline(16)))
    except (OSError, ValueError):   # a peer that ended, or a stranger
      pass
    connection.close()

  def lost(self):
    """{rank: GONE, UNREACHABLE, STOPPED or FAILED} for every other rank
    that does not answer (FAILED: it said so, whether it has ended yet
    or not)."""
    others = [r for r in range(len(self.ranks)) if r != self.rank]
    with concurrent.futures.ThreadPoolExecutor(max(1, len(others))) as pool:
      states = list(pool.map(
          lambda r: _probe(self.ranks[r].address, self.ranks[r].port),
          others))
    return {r: FAILED if r in self._told_failed else state
            for r, state in zip(others, states) if state}

  def wait_others_gone(self, seconds):
    """Returns once every other rank's process has ended (its probe port
    refuses), or after `seconds`. One probe at a time: this runs at exit
    too (atexit), where no new thread may start."""
    deadline = time.monotonic() + seconds
    left = [r for r in range(len(self.ranks)) if r != self.rank]
    while left and time.monotonic() < deadline:
      left = [r for r in left if _probe(self.ranks[r].address,
                                        self.ranks[r].port) != GONE]
      if left:
        time.sleep(0.1)

  def first_alive(self, lost):
    """The lowest rank not in `lost`: the one survivor that reports."""
    return min(r for r in range(len(self.ranks)) if r not in lost)

  def describe(self, lost):
    """'host lh2 (ranks 2, 3: processes ended)' for each host whose ranks
    are all lost, then 'rank 1 of 2 on host lh1 (...)' for a part of a
    host (a stuck rank, or one that died of the loss: its host is still
    up), then 'rank 0 on host lh1 failed' for each rank that an error
    ended (its host is not lost)."""
    whole, part = [], []
    for host, ranks in self.hosts().items():
      gone = [r for r in ranks if r in lost and lost[r] != FAILED]
      if not gone:
        continue
      states = sorted({lost[r] for r in gone})
      what = " or ".join(STATE_WORDS[state][len(gone) > 1]
                         for state in states)
      listed = "rank{} {}".format("s" if len(gone) > 1 else "",
                                  ", ".join(map(str, gone)))
      if len(gone) == len(ranks):
        whole.append("host {} ({}: {})".format(host, listed, what))
      else:
        part.append("{} of {} on host {} ({})".format(listed, len(ranks),
                                                      host, what))
    failed = ["rank {} on host {} failed".format(r, self.ranks[r].host)
              for r in sorted(lost) if lost[r] == FAILED]
    return "; ".join(whole + part + failed)

  def acknowledge(self, reporter, seconds):
    """Tells rank `reporter` that this rank saw the loss too and stays
    quiet, then waits up to `seconds` for its word that it has reported.
    False if the reporter ended without that word: it died too (a Gloo
    abort in the same failed collective, say), so the loss is this rank's
    to report."""
    try:
      peer = self.ranks[reporter]
      with socket.create_connection((peer.address, peer.port),
                                    timeout=PROBE_SECONDS) as connection:
        connection.sendall(ACK)
        connection.settimeout(seconds)
        return connection.recv(1) == REPORTED
    except socket.timeout:   # still busy: it reports later or not at all
      return True
    except OSError:          # refused or reset: its process ended
      return False

  def await_acknowledgements(self, count, seconds):
    """The reporter, once it has printed: waits until `count` ranks
    acknowledged, for `seconds` at most, and answers each that the loss is
    reported."""
    deadline = time.monotonic() + seconds
    seen = 0
    while seen < count:
      try:
        connection = self._acknowledgements.get(
            timeout=max(0.01, deadline - time.monotonic()))
      except queue.Empty:
        break
      with connection:
        try:
          connection.sendall(REPORTED)
          seen += 1
        except OSError:
          pass
    return seen

  def end_stuck(self, lost):
    """Asks the keeper of every rank in `lost` that is STOPPED to kill it
    (a stopped process cannot end itself); the ranks it could not reach."""
    missed = []
    for rank in sorted(r for r, state in lost.items() if state == STOPPED):
      peer = self.ranks[rank]
      try:
        with socket.create_connection((peer.address, peer.keeper_port),
                                      timeout=PROBE_SECONDS) as connection:
          connection.sendall(stuck_rank_killer.END + peer.token.encode())
          connection.settimeout(PROBE_SECONDS)
          if connection.recv(1) != stuck_rank_killer.ENDED:
            missed.append(rank)
      except OSError:
        missed.append(rank)
    return missed

  def close(self):
    self._listener.close()


def _listening_socket(address):
  listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
  listener.bind((address, 0))
  listener.listen(64)
  return listener


def _start_keeper(address):
  """Starts this rank's keeper (legacy_hvd/faults/stuck_rank_killer.py);
  returns (its port, token)."""
  listener = _listening_socket(address)
  alive_read, alive_write = os.pipe()   # the rank keeps the write end
  token = secrets.token_hex(16)
  process = subprocess.Popen(
      [sys.executable, "-m", "legacy_hvd.faults.stuck_rank_killer",
       str(os.getpid()), str(alive_read), str(listener.fileno())],
      stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
      pass_fds=(alive_read, listener.fileno()))
  process.stdin.write(token.encode() + b"\n")
  process.stdin.close()
  os.close(alive_read)
  port = listener.getsockname()[1]
  listener.close()
  _keepers.append((process, alive_write))
  return port, token


def _reporter_wait(head_start):
  """Seconds until the reporter has surely printed: it notices the loss at
  most one Gloo time-out after this rank, then probes, then prints."""
  gloo = float(os.environ.get("HOROVOD_GLOO_TIMEOUT_SECONDS",
                              GLOO_TIMEOUT_SECONDS))
  return gloo + PROBE_SECONDS + head_start


def _tell(peer, message):
  try:
    with socket.create_connection((peer.address, peer.port),
                                  timeout=NOTICE_SECONDS) as connection:
      connection.sendall(message)
  except OSError:   # gone or stuck: it learns nothing more from this rank
    pass


def _probe(address, port):
  """None if the rank at address:port answers, else GONE, UNREACHABLE,
  STOPPED or FAILED."""
  try:
    connection = socket.create_connection((address, port),
                                          timeout=PROBE_SECONDS)
  except ConnectionRefusedError:
    return GONE
  except OSError:   # timed out, no route, network down
    return UNREACHABLE
  with connection:
    try:
      connection.sendall(PING)
      answer = connection.recv(1)
    except socket.timeout:   # connected by the kernel, nobody answers
      return STOPPED
    except OSError:   # reset: the process ended meanwhile
      return GONE
  if answer == ALIVE:
    return None
  return FAILED if answer == FAILED_ANSWER else GONE


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
  of their own."""

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
      self._roster.mark_failed()
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
    """This rank ends for an error it reported itself: the others name it
    (Roster.mark_failed)."""
    self._roster.mark_failed()

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
        self._roster.await_acknowledgements(others, wait)
        # Last: once a stuck rank is killed the launcher stops the others.
        self._roster.end_stuck(lost)
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
