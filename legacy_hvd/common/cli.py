"""What every entry point shares: flag parsing and errors a user can cause.

    cli.run(main, [define_x])   # absl app.run with one-line flag errors
    cli.fail("--data_dir=x: ...")   # one line, exit 1, from one rank per host
                             # (naming the host when the job spans several)
    cli.exit_quietly()       # a rank whose error another rank reports
    cli.speaks_for_host()    # whether this rank is the one that reports
    cli.mark_exiting()       # a rank ending for a reason it reported itself
    cli.launched_processes() # N under horovodrun/mpirun -np N, else 1
    cli.tf_config_workers()  # (TF_CONFIG's workers, this one's index)

A launcher such as horovodrun starts the same command in every rank, so a bad
flag or path is found by all of them at once. The message is printed by local
rank 0 of each host only (one line on one machine, not one per rank, yet
still shown when only another host lacks a file), and every rank exits
non-zero, so the launcher stops the job and nobody waits in a collective.
When the job spans several hosts the line names the host it comes from
(`program: error: on lh2: ...`), like `mpirun --tag-output`.
"""
import faulthandler
import json
import os
import socket
import sys
import time

from absl import app
from absl import flags

# Launchers announce the rank in the environment before Horovod starts.
_LOCAL_RANK_VARIABLES = ("HOROVOD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                         "MPI_LOCALRANKID")
_WORLD_SIZE_VARIABLES = ("HOROVOD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
USAGE_ERROR = 2
INPUT_ERROR = 1
LOST_PEER = 75   # EX_TEMPFAIL: a host was lost; relaunching may succeed
# Set by the Slurm launcher (legacy_hvd.launch.slurm: its plan of the ranks) in
# every rank's environment.
SLURM_PLAN = "LEGACY_HVD_SLURM_HOSTS"
# Set by a launcher that decides what follows a lost host or a failed rank
# (the supervisor, the Slurm launcher) to its name, in every rank's
# environment: a rank under it reports the loss and leaves the verdict,
# the one error line, to it.
DECIDER = "LEGACY_HVD_DECIDER"
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
  """Whether this rank is the one of its host that prints what every rank
  would print alike: fail()'s line, a warning about a shared input."""
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
  """(rank, size, local_rank, local_size, cross_rank, cross_size) of worker
  `index` of `workers` ("host:port" or "host" each), as horovodrun numbers
  them: its index among all and among those on its host; its host's index
  among the hosts with a worker of its local rank, and their number."""
  hosts = [worker.rsplit(":", 1)[0] for worker in workers]
  here = [i for i, host in enumerate(hosts) if host == hosts[index]]
  local_rank = here.index(index)
  peers = [host for host in dict.fromkeys(hosts)
           if hosts.count(host) > local_rank]
  return (index, len(workers), local_rank, len(here),
          peers.index(hosts[index]), len(peers))


def launched_processes():
  """How many processes the launcher started for this job (TF_CONFIG's
  workers for tf.distribute); 1 without one."""
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
  """Prints `program: error: message` (once per host) and exits.

  reporter: whether this rank prints; None: local rank 0 of each host does.
  """
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
  """`program: [on host: ]message`: what a rank reports to the launcher
  that decides (DECIDER)."""
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
  """One copy of each log record, without TF1 deprecation notices.

  TF1 APIs are this project's subject, so their deprecation notices (two
  multi-line warnings per hook) would bury the training log.
  """
  import tensorflow as tf
  from tensorflow.python.util import deprecation
  deprecation._PRINT_DEPRECATION_WARNINGS = False  # pylint: disable=protected-access
  # absl's handler on the root logger already prints TF's records; TF's own
  # handler, added when it was imported before absl's, would print them twice.
  tf.get_logger().handlers.clear()


def run_launcher(main):
  """A launcher's entry point (the supervisor, launch.workers), its flags
  defined: app.run(main); main gets the command after `--`. Not run(): that
  quiets TensorFlow, which the launcher side never imports."""
  app.run(main, flags_parser=lambda argv: parse_flags(
      argv, positional_args=True))


def run(main, define_flags=(), positional_args=False):
  """Defines the flags (each of `define_flags` called), then app.run(main)
  with one-line flag errors; main gets the arguments left.

  absl turns on Python's faulthandler, which makes a rank that aborts in
  C++ (Gloo's failed check in Horovod's background thread when peers die,
  say) print every thread's Python stack. A rank's error is one line: the
  dump is off unless asked for (PYTHONFAULTHANDLER=1 or -X faulthandler).
  """
  for define in define_flags:
    define()
  quiet_tensorflow()
  asked_for_dump = faulthandler.is_enabled()

  def main_without_dump(argv):
    if not asked_for_dump:
      faulthandler.disable()
    return main(argv)

  app.run(main_without_dump,
          flags_parser=lambda argv: parse_flags(argv, positional_args))
