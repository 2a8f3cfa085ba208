"""Where every rank of the job runs, how to reach it (one allgather of a row
per rank, by the trainer's collectives), and which ranks are lost, in the
words of the one line that names them."""
import collections
import concurrent.futures
import json
import socket
import time

import numpy as np

from legacy_hvd.faults import answer_server
from legacy_hvd.faults import keepers
from legacy_hvd.faults import probes

ROW_BYTES = 256         # one rank's JSON record, zero-padded
# What the one line says of ranks lost each way (one rank, several).
STATE_WORDS = {
    probes.GONE: ("process ended", "processes ended"),
    probes.UNREACHABLE: ("host unreachable", "host unreachable"),
    probes.STOPPED: ("not answering: stopped or stuck",
                     "not answering: stopped or stuck"),
}

# Where a rank runs and how to reach it and its keeper.
Peer = collections.namedtuple(
    "Peer", ["host", "address", "port", "keeper_port", "token"])


def host_name():
  """This machine's hostname: what the start line and errors call it."""
  return socket.gethostname()


class Roster:
  """This rank, its probe port and keeper; once gathered, every rank's Peer."""

  def __init__(self, rank, server, address, keeper):
    self.rank = rank
    self.server = server     # this rank's answer_server.AnswerServer
    self._address = address
    self._keeper = keeper    # (keeper port, token)
    self.ranks = []      # [Peer] indexed by rank

  @classmethod
  def listen(cls, rank):
    """Opens this rank's probe port on its hostname's address (Gloo's too; else
    loopback), answers from a thread, and starts the rank's keeper."""
    try:
      address = socket.gethostbyname(host_name())
    except OSError:
      address = "127.0.0.1"
    server = answer_server.AnswerServer(probes.listening_socket(address))
    roster = cls(rank, server, address, keepers.start(address))
    server.start()
    return roster

  def peer(self):
    """This rank's Peer: where it runs, its port and its keeper's."""
    return Peer(host_name(), self._address, self.server.port, *self._keeper)

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

  def lost(self):
    """{rank: GONE, UNREACHABLE, STOPPED or FAILED} for every other rank that
    does not answer (FAILED: it said so, ended yet or not)."""
    others = [r for r in range(len(self.ranks)) if r != self.rank]
    with concurrent.futures.ThreadPoolExecutor(max(1, len(others))) as pool:
      states = list(pool.map(
          lambda r: probes.probe(self.ranks[r].address, self.ranks[r].port),
          others))
    return {r: probes.FAILED if r in self.server.failed_ranks else state
            for r, state in zip(others, states) if state}

  def wait_others_gone(self, seconds):
    """Returns once every other rank has ended, or after `seconds`. One probe
    at a time: this runs at exit too, where no new thread may start."""
    deadline = time.monotonic() + seconds
    left = [r for r in range(len(self.ranks)) if r != self.rank]
    while left and time.monotonic() < deadline:
      left = [r for r in left if probes.probe(
          self.ranks[r].address, self.ranks[r].port) != probes.GONE]
      if left:
        time.sleep(0.1)

  def first_alive(self, lost):
    """The lowest rank not in `lost`: the one survivor that reports."""
    return min(r for r in range(len(self.ranks)) if r not in lost)

  def describe(self, lost):
    """'host lh2 (ranks 2, 3: processes ended)' per wholly lost host, then
    'rank 1 of 2 on host lh1 (...)' per part of one (a stuck rank, or one that
    died of the loss), then 'rank 0 on host lh1 failed' per rank an error
    ended."""
    whole, part = [], []
    for host, ranks in self.hosts().items():
      gone = [r for r in ranks if r in lost and lost[r] != probes.FAILED]
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
              for r in sorted(lost) if lost[r] == probes.FAILED]
    return "; ".join(whole + part + failed)

  def close(self):
    self.server.close()
