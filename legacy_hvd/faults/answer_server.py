"""This rank's probe port, on a thread of its own: a rank blocked in a
collective or busy in a step still answers ALIVE; each survivor's
acknowledgement is held open until the reporter answers it."""
import queue
import threading

from legacy_hvd.faults import probes


class AnswerServer:
  """Answers on `listener` (a probes.listening_socket) once started."""

  def __init__(self, listener):
    self._listener = listener
    self._failed = False
    self.failed_ranks = set()   # ranks that said an uncaught error ends them
    self.acknowledgements = queue.Queue()   # ACK connections, kept open

  @property
  def port(self):
    return self._listener.getsockname()[1]

  def start(self):
    """Answers from a thread, until close()."""
    threading.Thread(target=self._answer, name="peer-answer",
                     daemon=True).start()

  def answer_failed(self):
    """From now on this rank answers probes FAILED."""
    self._failed = True

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
    connection.settimeout(probes.PROBE_SECONDS)
    try:
      asked = connection.recv(1)
      if asked == probes.PING:
        connection.sendall(probes.FAILED_ANSWER if self._failed
                           else probes.ALIVE)
      elif asked == probes.ACK:   # answered once this rank has reported
        self.acknowledgements.put(connection)
        return
      elif asked == probes.FAILED_NOTICE:
        self.failed_ranks.add(int(connection.makefile("rb").readline(16)))
    except (OSError, ValueError):   # a peer that ended, or a stranger
      pass
    connection.close()

  def close(self):
    self._listener.close()
