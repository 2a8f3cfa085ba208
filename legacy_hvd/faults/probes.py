"""What ranks send each other on their probe ports, and the probe that tells a
running rank from one that is gone, stuck or failed, adding nothing to the
training loop: a dead process's host refuses, an unreachable one times out, a
stopped or stuck process is connected by the kernel but never answers.
Standard library only."""
import socket

PROBE_SECONDS = 3.0     # a host that does not answer a connect in this is gone
NOTICE_SECONDS = 1.0    # for each notice: a stuck peer must not delay the end
# What a probe finds of a rank that does not answer as running.
GONE, UNREACHABLE = "ended", "unreachable"
STOPPED, FAILED = "stopped", "failed"
PING = b"?"             # a probe: "are you running?"
ALIVE = b"+"            # the answer of a rank that runs
FAILED_ANSWER = b"x"    # the answer of a rank that an uncaught error ends
FAILED_NOTICE = b"f"    # its word to the others, then its rank and "\n"
ACK = b"!"              # a survivor's "I saw it too" to the reporting rank
REPORTED = b"."         # the reporter's answer: "I have printed the loss"


def listening_socket(address):
  """A TCP socket listening on a free port of `address`."""
  listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
  listener.bind((address, 0))
  listener.listen(64)
  return listener


def probe(address, port):
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


def tell(address, port, message):
  """Sends `message` to the rank at address:port within NOTICE_SECONDS, if it
  takes it."""
  try:
    with socket.create_connection((address, port),
                                  timeout=NOTICE_SECONDS) as connection:
      connection.sendall(message)
  except OSError:   # gone or stuck: it learns nothing more from this rank
    pass
