"""A rank's keeper: a small process beside it that can end it when it is stuck.

    python -m legacy_hvd.faults.stuck_rank_killer RANK_PID ALIVE_FD LISTEN_FD < TOKEN

Sent END and TOKEN on LISTEN_FD (TOKEN from stdin: every user of the host can
read a command line), it SIGKILLs the rank, stopped or not; it exits when
ALIVE_FD, a pipe only the rank can write, ends. Standard library only;
Python 3.7-compatible."""
import os
import select
import signal
import socket
import sys

END = b"K"            # a survivor's "end your rank", followed by the token
ENDED = b"k"          # the keeper's answer once the rank is killed
READ_SECONDS = 3.0    # for a request's bytes once connected


def serve(rank_pid, alive_fd, listener, token):
  """Until the rank ends, or a request with `token` ends it."""
  request = END + token.encode()
  while True:
    readable, _, _ = select.select([alive_fd, listener], [], [])
    if alive_fd in readable:   # end-of-file: the rank has ended
      return
    try:
      connection, _ = listener.accept()
    except OSError:
      continue
    with connection:
      connection.settimeout(READ_SECONDS)
      try:
        received = b""
        while len(received) < len(request):
          chunk = connection.recv(len(request) - len(received))
          if not chunk:
            break
          received += chunk
        if received != request:
          continue
        os.kill(rank_pid, signal.SIGKILL)
        connection.sendall(ENDED)
      except OSError:
        continue
    return


def main(argv):
  rank_pid, alive_fd, listen_fd = (int(a) for a in argv[1:4])
  token = sys.stdin.readline().strip()
  # The job's stop signals are the rank's to handle: horovodrun's SIGTERM
  # to a local rank's process group must not end the keeper first.
  for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(number, signal.SIG_IGN)
  if os.getppid() != rank_pid:   # the rank ended before the keeper started
    return
  listener = socket.socket(fileno=listen_fd)
  serve(rank_pid, alive_fd, listener, token)


if __name__ == "__main__":
  main(sys.argv)
