"""Flag parsing and the errors a user can cause, for every entry point.

Every rank finds a bad flag or path at once: local rank 0 of each host prints
the one line (naming the host when the job spans several) and every rank
exits non-zero, so the launcher stops the job and nobody waits in a collective.
"""
import faulthandler
import json
import os
import socket
import sys
import time

from absl import app
from absl import flags

from legacy_hvd.common import signals

# Launchers announce the rank in the environment before Horovod starts.
_LOCAL_RANK_VARIABLES = ("HOROVOD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                         "MPI_LOCALRANKID")
_WORLD_SIZE_VARIABLES = ("HOROVOD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
USAGE_ERROR = 2
INPUT_ERROR = 1
LOST_PEER = 75   # EX_TEMPFAIL: a host was lost; relaunching may succeed
# The Slurm launcher's plan of the ranks, in every rank's environment.
SLURM_PLAN = "LEGACY_HVD_SLURM_HOSTS"
# Set, to its name, by a launcher that decides what follows a lost host or a
# failed rank: a rank under it reports the loss and leaves the verdict to it.
DECIDER = "LEGACY_HVD_DECIDER"
# Set by a launcher that relaunches or requeues, to <run>.<round>: the run
# stays the same across its rounds (launch/leftovers.py, model_dir_claim.py).
ROUND = "LEGACY_HVD_ROUND"
# Seconds a silent rank waits before exiting: horovodrun kills every rank
# once one exits, so a silent rank exiting first could cut off the line.
REPORTER_HEAD_START = 3.0


_exiting = False   # set once this rank is ending for a reason it reported


def exiting():
  """True once fail() or exit_quietly() began ending this process."""
  return _exiting


def mark_exiting():
  """This process is ending for a reason it reports itself."""
  global _exiting
  _exiting = True


class UserError(Exception):
  """An input the user gave is unusable; str(error) is the one-line reason."""


def speaks_for_host():
  """Whether this rank speaks for its host (fail()'s line, shared warnings)."""
  for variable in _LOCAL_RANK_VARIABLES:
    if variable in os.environ:
      return os.environ[variable] == "0"
  workers = tf_config_workers()
  if workers:
    return workers_place(*workers)[2] == 0
  return True


def tf_config_workers():
  """(the workers' "host:port" list, this one's index) from TF_CONFIG (what
  tf.distribute's TFConfigClusterResolver reads), or None without one."""
  try:
    tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    workers = tf_config["cluster"]["worker"]
    return list(workers), int(tf_config["task"]["index"])
  except (ValueError, KeyError, TypeError):
    return None


def workers_place(workers, index):
  """horovodrun's (rank, size, local_rank, local_size, cross_rank, cross_size)
  for worker `index` of `workers` ("host:port" or "host" each)."""
  hosts = [worker.rsplit(":", 1)[0] for worker in workers]
  here = [i for i, host in enumerate(hosts) if host == hosts[index]]
  local_rank = here.index(index)
  peers = [host for host in dict.fromkeys(hosts)
           if hosts.count(host) > local_rank]
  return (index, len(workers), local_rank, len(here),
          peers.index(hosts[index]), len(peers))


def launched_processes():
  """The processes the launcher started (or TF_CONFIG's workers); else 1."""
  for variable in _WORLD_SIZE_VARIABLES:
    if variable in os.environ:
      return int(os.environ[variable])
  workers = tf_config_workers()
  return len(workers[0]) if workers else 1


def _program():
  """The name the user ran: the module for `python -m`, else the script."""
  spec = getattr(sys.modules["__main__"], "__spec__", None)
  if spec is not None:
    return spec.name
  return os.path.basename(sys.argv[0]) if sys.argv else "legacy_hvd"


def _spans_hosts():
  """True when the launcher started this job's ranks on several hosts."""
  if "HOROVOD_CROSS_SIZE" in os.environ:   # horovodrun: hosts, seen by local rank 0
    return int(os.environ["HOROVOD_CROSS_SIZE"]) > 1
  local = os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE")
  if local is not None:
    return int(local) < launched_processes()
  workers = tf_config_workers()
  return workers is not None and len(
      {worker.rsplit(":", 1)[0] for worker in workers[0]}) > 1


def fail(message, exit_code=INPUT_ERROR, reporter=None):
  """Prints `program: error: message` (once per host by default), exits."""
  global _exiting
  _exiting = True
  if speaks_for_host() if reporter is None else reporter:
    print(error_line(message), file=sys.stderr, flush=True)
    sys.exit(exit_code)
  exit_quietly(exit_code)


def error_line(message):
  """`program: error: [on host: ]message`, as fail() prints it."""
  return _line("error: ", message)


def report_line(message):
  """`program: [on host: ]message`: a report to the launcher that decides."""
  return _line("", message)


def _line(kind, message):
  where = f"on {socket.gethostname()}: " if _spans_hosts() else ""
  return f"{_program()}: {kind}{where}{message}"


def exit_quietly(exit_code=INPUT_ERROR):
  """Exits without a word, after the rank that reports the error had time."""
  global _exiting
  _exiting = True
  time.sleep(REPORTER_HEAD_START)
  sys.exit(exit_code)


def parse_flags(argv, positional_args=False):
  """absl flag parsing that reports a bad flag in one line, not a usage dump."""
  try:
    remaining = flags.FLAGS(argv)
  except flags.Error as e:
    fail(str(e), USAGE_ERROR)
  if len(remaining) > 1 and not positional_args:
    fail(f"unexpected argument {remaining[1]!r}; flags take the form "
         "--name=value", USAGE_ERROR)
  return remaining


def quiet_tensorflow():
  """One copy of each log record, without TF1 deprecation notices (this
  project uses TF1 APIs: they would bury the training log)."""
  import tensorflow as tf
  from tensorflow.python.util import deprecation
  deprecation._PRINT_DEPRECATION_WARNINGS = False  # pylint: disable=protected-access
  # absl's handler on the root logger already prints TF's records; TF's own
  # handler, added when it was imported before absl's, would print them twice.
  tf.get_logger().handlers.clear()


def run_launcher(main):
  """app.run(main) for a launcher; main gets the command after `--`. Not run():
  that quiets TensorFlow, which the launcher side never imports."""
  app.run(main, flags_parser=lambda argv: parse_flags(
      argv, positional_args=True))


def run(main, define_flags=(), positional_args=False):
  """Defines the flags, then app.run(main) with one-line flag errors; absl's
  faulthandler stays off unless asked for (PYTHONFAULTHANDLER=1), or a rank
  aborting in C++ (Gloo's failed check) would print every thread's stack."""
  for define in define_flags:
    define()
  quiet_tensorflow()
  asked_for_dump = faulthandler.is_enabled()

  def main_without_dump(argv):
    if not asked_for_dump:
      faulthandler.disable()
    result = main(argv)
    # Its work done, a stop signal changes nothing while the process exits
    # (seconds of TensorFlow's teardown, Python's handlers gone).
    signals.ignore()
    return result

  app.run(main_without_dump,
          flags_parser=lambda argv: parse_flags(argv, positional_args))
