"""Measures an emulated link between two test hosts: bandwidth both ways, RTT.

    python tools/testhosts.py up --hosts 2 --link 100mbit
    python tools/linkcheck.py [--slot 0] [--seconds 3]    # lh1 <-> lh2

    result = measure(cluster.host("lh1"), cluster.host("lh2"), seconds=3)
    # {"send_mbit": lh1 -> lh2, "receive_mbit": lh2 -> lh1, "rtt_ms": ...}

How: a server (`linkcheck.py serve`) runs inside the second host; a client
(`linkcheck.py client`) inside the first connects over the hosts' own
addresses (198.18.x.y, nothing leaves the bridge) and
  1. sends zeros for `seconds` (lh1 -> lh2),
  2. reads what the server sends for `seconds` (lh2 -> lh1), then asks the
     server for its figure,
  3. bounces one byte back and forth (TCP_NODELAY) and takes the median
     round trip.
Each way the sender counts what the far kernel acknowledged (TCP_INFO's
tcpi_bytes_acked) from its first write to its last, while its socket is
full, so neither process's wake-up after the stream counts: timed to the
server's acknowledgement that it had read everything, a server the suite's
load starved for a moment halved a 20 Mbit/s link's figure.
Bandwidth is TCP payload (goodput) in Mbit/s, so it is ~4-5 % below the
configured rate: tc's token bucket counts Ethernet, IP and TCP headers too
(66 bytes per 1,448-byte segment, `PAYLOAD_SHARE`). The client prints one
JSON line. Python 3.7-compatible.
"""
import argparse
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PORT = 5201                 # on the test hosts' own addresses only
CHUNK = 256 * 1024          # bytes per send/recv call
PINGS = 200                 # one-byte round trips for the RTT
PAYLOAD_SHARE = 1448.0 / (1448 + 66)   # TCP payload / bytes on the wire
SEND, RECEIVE, PING, FIGURE = b"S", b"R", b"P", b"F"
# Linux's struct tcp_info (linux/tcp.h): tcpi_bytes_acked, a u64 at byte 120.
TCP_INFO_SIZE, BYTES_ACKED_AT = 232, 120
RATE = struct.Struct("!Qd")             # bytes acknowledged, seconds


def serve(address, port):
  """Runs inside the far host: answers any number of client requests."""
  listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
  listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
  listener.bind((address, port))
  listener.listen(4)
  print("ready", flush=True)
  sent = (0, 0.0)                 # the last RECEIVE's (bytes, seconds)
  while True:
    connection, _ = listener.accept()
    with connection:
      sent = _answer(connection, sent)


def _answer(connection, sent):
  """Answers one request; the server's last send figure."""
  connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
  request = connection.recv(1)
  if request == SEND:             # read until the client stops
    while connection.recv(CHUNK):
      pass
    connection.sendall(b"done")
  elif request == RECEIVE:        # send for the seconds the client asks
    seconds = struct.unpack("!d", _read(connection, 8))[0]
    sent = (0, 0.0)               # none, should the client go
    with _suppress_reset():
      sent = _send_for(connection, seconds)
  elif request == FIGURE:
    connection.sendall(RATE.pack(*sent))
  elif request == PING:
    while True:
      byte = connection.recv(1)
      if not byte:
        break
      connection.sendall(byte)
  return sent


class _suppress_reset:
  def __enter__(self):
    return self

  def __exit__(self, kind, value, traceback):
    return kind is not None and issubclass(kind, (BrokenPipeError,
                                                  ConnectionResetError))


def _send_for(connection, seconds):
  """Sends zeros for `seconds`: (bytes the far kernel acknowledged, seconds)
  between the first write and the last, both taken with the socket full."""
  zeros = bytes(CHUNK)
  connection.sendall(zeros)
  start, first = _acked(connection)
  end, last = start, first
  while end - start < seconds:
    connection.sendall(zeros)
    end, last = _acked(connection)
  return last - first, end - start


def _acked(connection):
  """(now, bytes of this socket's stream the far kernel acknowledged)."""
  info = connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO,
                               TCP_INFO_SIZE)
  return time.monotonic(), struct.unpack_from("=Q", info, BYTES_ACKED_AT)[0]


def _read(connection, size):
  data = b""
  while len(data) < size:
    more = connection.recv(size - len(data))
    if not more:
      raise ConnectionError("the server closed the connection")
    data += more
  return data


def _connect(address, port, request):
  connection = socket.create_connection((address, port), timeout=30)
  connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
  connection.sendall(request)
  return connection


def client(address, port, seconds):
  """Runs inside the near host: {"send_mbit", "receive_mbit", "rtt_ms"}."""
  with _connect(address, port, SEND) as connection:
    sent, send_seconds = _send_for(connection, seconds)
    connection.shutdown(socket.SHUT_WR)
    _read(connection, 4)          # the server read it all
  with _connect(address, port, RECEIVE + struct.pack("!d", seconds)) as c:
    while c.recv(CHUNK):
      pass
  with _connect(address, port, FIGURE) as connection:
    received, receive_seconds = RATE.unpack(_read(connection, RATE.size))
  if not receive_seconds:
    raise ConnectionError("the server's send was cut short")
  rtts = []
  with _connect(address, port, PING) as connection:
    for _ in range(PINGS):
      start = time.perf_counter()
      connection.sendall(b"x")
      _read(connection, 1)
      rtts.append(time.perf_counter() - start)
  return {"send_mbit": sent * 8 / send_seconds / 1e6,
          "receive_mbit": received * 8 / receive_seconds / 1e6,
          "rtt_ms": statistics.median(rtts) * 1e3,
          "rtt_p90_ms": sorted(rtts)[int(0.9 * (PINGS - 1))] * 1e3}


def measure(near, far, seconds=3.0, port=PORT):
  """Bandwidth both ways and RTT between test hosts `near` and `far`
  (tools.testhosts.Host); the client's dict."""
  server = far.popen([sys.executable, os.path.abspath(__file__), "serve",
                      "--address", far.address, "--port", str(port)],
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                     universal_newlines=True)
  try:
    if server.stdout.readline().strip() != "ready":
      raise RuntimeError("linkcheck server on {} did not start".format(
          far.name))
    process = near.run([sys.executable, os.path.abspath(__file__), "client",
                        "--address", far.address, "--port", str(port),
                        "--seconds", str(seconds)],
                       timeout=4 * seconds + 60)
    if process.returncode:
      raise RuntimeError("linkcheck client on {} failed: {}".format(
          near.name, process.stderr.strip()[-500:]))
    return json.loads(process.stdout.strip().splitlines()[-1])
  finally:
    server.kill()
    server.wait()


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("command", nargs="?", default="check",
                      choices=("check", "serve", "client"))
  parser.add_argument("--slot", type=int, default=0,
                      help="check: which test-host cluster (testhosts.py)")
  parser.add_argument("--near", default="lh1")
  parser.add_argument("--far", default="lh2")
  parser.add_argument("--seconds", type=float, default=3.0)
  parser.add_argument("--address", help="serve/client: the far host's")
  parser.add_argument("--port", type=int, default=PORT)
  args = parser.parse_args(argv)
  if args.command == "serve":
    serve(args.address, args.port)
  elif args.command == "client":
    print(json.dumps(client(args.address, args.port, args.seconds)))
  else:
    sys.path.insert(0, REPO)
    from tools import testhosts
    cluster = testhosts.attach(args.slot)
    if cluster is None:
      parser.exit(1, "linkcheck: error: no test hosts in slot {}; run "
                  "python tools/testhosts.py up first\n".format(args.slot))
    near, far = cluster.host(args.near), cluster.host(args.far)
    configured = near.rate()
    result = measure(near, far, args.seconds, args.port)
    result["configured"] = configured
    if configured:
      expected = testhosts.rate_mbit(configured) * PAYLOAD_SHARE
      result["expected_goodput_mbit"] = expected
    print("linkcheck: {} -> {}: {:.1f} Mbit/s, {} -> {}: {:.1f} Mbit/s; "
          "RTT median {:.3f} ms (p90 {:.3f}); configured {}{}".format(
              near.name, far.name, result["send_mbit"], far.name, near.name,
              result["receive_mbit"], result["rtt_ms"], result["rtt_p90_ms"],
              configured or "no limit",
              " (TCP payload at most {:.1f} Mbit/s)".format(expected)
              if configured else ""))
    print(json.dumps(result))
  return 0


if __name__ == "__main__":
  sys.exit(main())
