"""Each rank's keeper (stuck_rank_killer.py), from the ranks' side: a stuck
remote rank outlives horovodrun's end of its ssh; its keeper kills it when
asked with its token, which only the job's ranks learn."""
import os
import secrets
import socket
import subprocess
import sys

from legacy_hvd.faults import probes
from legacy_hvd.faults import stuck_rank_killer

# This process's keeper and the write end of its pipe, held for the
# process's lifetime (the pipe's end-of-file tells the keeper it ended).
_keepers = []


def start(address):
  """Starts this rank's keeper, listening on a port of `address`; returns
  (its port, token)."""
  listener = probes.listening_socket(address)
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


def end_stuck(ranks, lost):
  """Has the keeper of every STOPPED rank in `lost` kill it; returns the ranks
  it could not reach. ranks: the roster's Peers."""
  missed = []
  for rank in sorted(r for r, state in lost.items()
                     if state == probes.STOPPED):
    peer = ranks[rank]
    try:
      with socket.create_connection((peer.address, peer.keeper_port),
                                    timeout=probes.PROBE_SECONDS) as connection:
        connection.sendall(stuck_rank_killer.END + peer.token.encode())
        connection.settimeout(probes.PROBE_SECONDS)
        if connection.recv(1) != stuck_rank_killer.ENDED:
          missed.append(rank)
    except OSError:
      missed.append(rank)
  return missed
