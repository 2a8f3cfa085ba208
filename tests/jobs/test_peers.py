"""The roster's probes and the ranks' keepers on real processes (no
Horovod): a rank that answers, one that is stopped, one that an uncaught
error ends, and the keeper that kills a stopped one (only when asked with
its token)."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from legacy_hvd.faults import keepers
from legacy_hvd.faults import probes
from legacy_hvd.faults import roster
from legacy_hvd.faults import stuck_rank_killer
from tests.helpers import REPO, wait_for

pytestmark = pytest.mark.one_stack   # no TensorFlow in these processes

# A rank of a two-rank world, whose other rank (0) is this test: it prints
# its Peer, then sleeps; with "fail", an uncaught error ends it (its exit
# held back 2 s, as Horovod's shutdown holds a real rank's).
RANK = """
import atexit, json, sys, time
from legacy_hvd.faults import loss_watch, roster
me = roster.Roster.listen(1)
print(json.dumps(list(me.peer())), flush=True)
other = roster.Peer(*json.loads(sys.stdin.readline()))
me.ranks = [other, me.peer()]
loss_watch.LossWatch(me, None, 75, 0).start()
if sys.argv[1:] == ["fail"]:
  atexit.register(time.sleep, 2)
  time.sleep(0.5)
  raise RuntimeError("an error nobody anticipated")
time.sleep(600)
"""


@pytest.fixture
def two_ranks():
  """(this test's Roster as rank 0, start(*args) -> rank 1's process)."""
  me = roster.Roster.listen(0)
  started = []

  def start(*args):
    process = subprocess.Popen([sys.executable, "-c", RANK, *args], cwd=REPO,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE,
                               universal_newlines=True)
    started.append(process)
    rank1 = roster.Peer(*json.loads(process.stdout.readline()))
    me.ranks = [me.peer(), rank1]
    process.stdin.write(json.dumps(list(me.ranks[0])) + "\n")
    process.stdin.flush()
    return process
  yield me, start
  for process in started:
    if process.poll() is None:
      process.kill()
    process.wait()
  me.close()


def keepers_of(pid):
  """Pids of the keeper processes whose rank is `pid`."""
  found = []
  for entry in filter(str.isdigit, os.listdir("/proc")):
    try:
      with open("/proc/{}/cmdline".format(entry), "rb") as f:
        argv = f.read().split(b"\0")
    except OSError:
      continue
    if b"legacy_hvd.faults.stuck_rank_killer" in argv and str(pid).encode() in argv:
      found.append(int(entry))
  return found


def test_a_stopped_rank_is_named_and_its_keeper_kills_it(two_ranks):
  me, start = two_ranks
  rank1 = start()
  assert me.lost() == {}
  assert keepers_of(rank1.pid)
  os.kill(rank1.pid, signal.SIGSTOP)
  began = time.monotonic()
  lost = me.lost()
  assert lost == {1: probes.STOPPED}
  assert time.monotonic() - began < probes.PROBE_SECONDS + 1
  assert me.describe(lost) == ("rank 1 of 2 on host {} (not answering: "
                               "stopped or stuck)".format(roster.host_name()))
  # A request without the keeper's token ends nothing.
  peer = me.ranks[1]
  with socket.create_connection((peer.address, peer.keeper_port)) as c:
    c.sendall(stuck_rank_killer.END + b"0" * len(peer.token))
    c.settimeout(5)
    assert c.recv(1) == b""
  assert rank1.poll() is None
  assert keepers.end_stuck(me.ranks, lost) == []
  assert rank1.wait(timeout=5) == -signal.SIGKILL
  wait_for(lambda: not keepers_of(rank1.pid), 5, "the keeper to end")
  assert me.lost() == {1: probes.GONE}


def test_a_failing_rank_says_so_before_it_ends(two_ranks):
  me, start = two_ranks
  rank1 = start("fail")
  time.sleep(1.5)   # it has raised and is held in its exit
  assert rank1.poll() is None   # still in its exit
  assert me.lost() == {1: probes.FAILED}
  rank1.wait(timeout=10)
  # Once ended, it is still the failed rank it said it was.
  assert me.lost() == {1: probes.FAILED}
  assert me.describe({1: probes.FAILED}) == "rank 1 on host {} failed".format(
      roster.host_name())
  assert rank1.stderr.read().count("Traceback") == 1


def test_a_rank_that_ends_leaves_no_keeper(two_ranks):
  me, start = two_ranks
  rank1 = start()
  assert keepers_of(rank1.pid)
  rank1.kill()
  rank1.wait()
  wait_for(lambda: not keepers_of(rank1.pid), 5, "the keeper to end")
