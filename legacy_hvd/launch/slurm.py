"""Runs a trainer under Slurm, every rank a task of one `srun` step: in the
batch script, on the allocation's first node, it does what horovodrun does
before it starts ranks over ssh, then starts them with srun instead.

    sbatch -N 2 --ntasks-per-node=2 slurm/train.sbatch \\
        [--module=legacy_hvd.train_tf2] [--preflight] [--max_restarts=3] \\
        [--image=DIR --bind=/scratch:/runs] [trainer flags]

Bad input ends the job in one line, FAILED, before any rank starts. As tasks
of the step the ranks get Slurm's signals and none outlives the job. Imports
no trainer, TensorFlow or Horovod's frameworks. Python 3.7-compatible."""
import getpass
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

from absl import flags as absl_flags

import flags
from flags import output as output_flags
from flags import slurm as slurm_flags
from legacy_hvd.common import checkpoint_state
from legacy_hvd.common import cli
from legacy_hvd.common import signals
from legacy_hvd.launch import container
from legacy_hvd.launch import hostlists
from legacy_hvd.launch import leftovers
from legacy_hvd.launch import run_outcome
from legacy_hvd.launch import writable
from legacy_hvd.launch import slurm_healing

PROGRAM = "legacy_hvd.launch.slurm"
TRAINERS = tuple(flags.TRAINERS)
# No Horovod: no rendezvous server.
STRATEGY_TRAINERS = ("legacy_hvd.train_mwms", "legacy_hvd.train_mwms_keras")
RANK_FAILED = 70        # EX_SOFTWARE: a rank's own error; not requeued
LEFTOVER_SECONDS = 90   # for an earlier run's processes to be gone
STOPPED_FOR_REQUEUE = 128 + signal.SIGUSR1   # a rank's code after SIGUSR1
STOPPED_BY_TERM = 128 + signal.SIGTERM
# Seconds srun lets the other tasks run once one has ended: the trainers end
# every rank themselves (an agreed stop, or the lost-host line after Gloo's
# time-out); this bounds a rank that hangs anyway.
TASK_WAIT = 120
# The signal slurm/train.sbatch trapped before it exec'd the launcher.
EARLY_SIGNAL = "LEGACY_HVD_EARLY_SIGNAL"
# Seconds between the SIGUSR1s passed on to srun, until it ends.
RESEND_SECONDS = 5


# -- the allocation --------------------------------------------------------
def tasks_per_node(value):
  """SLURM_TASKS_PER_NODE ("2(x3),1") -> [2, 2, 2, 1]."""
  counts = []
  for item in value.split(","):
    m = re.match(r"^(\d+)(?:\(x(\d+)\))?$", item)
    if not m:
      raise ValueError("SLURM_TASKS_PER_NODE: cannot read {!r}".format(value))
    counts += [int(m.group(1))] * int(m.group(2) or 1)
  return counts


def allocation(env):
  """[(node, tasks)] of this job's allocation, in Slurm's node order."""
  if "SLURM_JOB_ID" not in env or "SLURM_JOB_NODELIST" not in env:
    raise cli.UserError(
        "not inside a Slurm allocation (no SLURM_JOB_ID): submit the job "
        "with sbatch -N 2 --ntasks-per-node=2 slurm/train.sbatch ...")
  nodes = subprocess.run(
      ["scontrol", "show", "hostnames", env["SLURM_JOB_NODELIST"]],
      stdout=subprocess.PIPE, universal_newlines=True,
      check=True).stdout.split()
  counts = tasks_per_node(env.get("SLURM_TASKS_PER_NODE",
                                  ",".join("1" for _ in nodes)))
  return list(zip(nodes, counts))


# -- the batch script's side -------------------------------------------------
class Received(signals.Recorder):
  """What the batch shell received: SIGUSR1, a requeue request passed on to the
  ranks; SIGINT or SIGHUP, a person's stop, passed on as SIGUSR1 (srun ends
  its tasks at once on a SIGTERM) and never requeued; SIGTERM, recorded so
  that it does not end this shell before the ranks have stopped (Slurm
  signals the tasks itself)."""

  def __init__(self):
    super().__init__(signals.LAUNCHER_HANDLED)
    self.srun = None
    self._passing_on = False

  @property
  def requeue(self):
    return signal.SIGUSR1 in self.seen and not self.stop_asked

  @property
  def stop_asked(self):
    """SIGINT or SIGHUP, a person's stop, if either came; else 0."""
    return max(self.seen & {signal.SIGINT, signal.SIGHUP}, default=0)

  def react(self, signum):
    if signum != signal.SIGTERM:
      self._pass_on()

  def replay(self, name):
    """The signal the batch script trapped before this launcher ran ("USR1",
    "TERM", ... or none), received again."""
    if name:
      os.kill(os.getpid(), signal.Signals["SIG" + name])

  def started(self, srun):
    """srun runs: a signal that came while it started is passed on now."""
    self.srun = srun
    if self.seen - {signal.SIGTERM}:
      self._pass_on()

  def _pass_on(self):
    """SIGUSR1 to srun (to every task), again every RESEND_SECONDS while it
    runs: srun drops one that comes before its tasks exist."""
    if self.srun is None or self._passing_on:
      return
    self._passing_on = True

    def resend():
      while self.srun.poll() is None:
        self.srun.send_signal(signal.SIGUSR1)
        time.sleep(RESEND_SECONDS)
    threading.Thread(target=resend, daemon=True).start()


def launcher_flags():
  """The launcher's own flags (flags/slurm.py), what docs/slurm.md lists."""
  values = absl_flags.FlagValues()
  slurm_flags.define_slurm(values)
  return values


def parse(argv):
  """(the launcher's flags, the trainer's arguments, unchanged, in order)."""
  values = launcher_flags()
  if {"--help", "-h", "--helpfull"} & set(argv):
    print("usage: sbatch ... slurm/train.sbatch [launcher flags] [trainer "
          "flags]\n\n" + values.get_help())
    sys.exit(0)
  try:
    trainer_args = values([PROGRAM] + list(argv), known_only=True)[1:]
  except absl_flags.Error as e:
    cli.fail("{}; no rank was started".format(e), cli.USAGE_ERROR)
  return values, trainer_args


def check_trainer_flags(module, trainer_args):
  """The trainer's flags judged here, as the trainer would judge them: a
  bad one ends the job before srun, in one line, exit 2."""
  try:
    flags.parse_trainer_flags(module, trainer_args)
  except absl_flags.Error as e:
    cli.fail("{}: {}; no rank was started".format(module, e),
             cli.USAGE_ERROR)


def image_binds(args, trainer_args):
  """--image and --bind judged on this node (launch/container.py)."""
  if args.preflight and args.image:
    raise cli.UserError("--preflight runs outside the image: it does not "
                        "take --image yet" + container.NOT_STARTED)
  return container.binds(args.image, args.bind, args.module not in STRATEGY_TRAINERS,
                         output_flags.model_dir_of(trainer_args))


def log(message):
  print("{}: {}".format(PROGRAM, message), file=sys.stderr, flush=True)


def run_of(env):
  """This job's run, the same across its requeues: its id, with the
  cluster's name (a job id is unique only within its cluster)."""
  return "{}-{}".format(env.get("SLURM_CLUSTER_NAME", "slurm"),
                        env.get("SLURM_JOB_ID", ""))


def launch(args, trainer_args, binds, env, received):
  """Runs the ranks as one srun step; returns the batch script's code.
  received: the signals this shell got, from its start."""
  plan = allocation(env)
  hosts = hostlists.hosts_arg(plan)
  size = hostlists.slot_count(plan)
  job = env["SLURM_JOB_ID"]
  restart = int(env.get("SLURM_RESTART_COUNT", "0"))
  directory = container.outside(output_flags.model_dir_of(trainer_args), binds)
  ledger = slurm_healing.Ledger(directory, job)
  step = checkpoint_state.latest_step(directory)
  log("job {}, restart {}: {} ranks on {}; {} {}{}".format(
      job, restart, size, hosts,
      "resuming at step {} in".format(step) if step else "starting in",
      directory, "; after {} of --max_restarts={}, excluded: {}".format(
          len(ledger.restarts), args.max_restarts,
          ",".join(ledger.excluded) or "none") if ledger.restarts else ""))
  # Every process of this run carries the mark (launch/leftovers.py).
  run = run_of(env)
  marked = dict(env, **leftovers.mark(run, restart))
  if restart:
    wait_for_leftovers(run, job, [node for node, _ in plan])
  if args.preflight:
    preflight(hosts, trainer_args, args.network_interface, marked)

  task_env = dict(marked, **{cli.SLURM_PLAN: hosts, cli.DECIDER: PROGRAM,
                             "PYTHONUNBUFFERED": "1"})
  task_env.pop(EARLY_SIGNAL, None)
  if received.first:   # from here on, received.started passes it on
    return stop_before_start(received, job, directory)
  rendezvous = None
  if args.module not in STRATEGY_TRAINERS:
    from horovod.runner.http.http_server import RendezvousServer
    # Horovod: the rendezvous server every rank's Gloo meets at, on rank 0's
    # node, as horovodrun runs it (tf.distribute: SlurmClusterResolver).
    from horovod.runner.common.util import hosts as horovod_hosts
    rendezvous = RendezvousServer()
    port = rendezvous.start()
    rendezvous.init(horovod_hosts.get_host_assignments(
        horovod_hosts.parse_hosts(hosts), size))
    task_env.update({
        "HOROVOD_GLOO_RENDEZVOUS_ADDR": socket.gethostbyname(
            socket.gethostname()),
        "HOROVOD_GLOO_RENDEZVOUS_PORT": str(port),
        "HOROVOD_CONTROLLER": "gloo",
        "HOROVOD_CPU_OPERATIONS": "gloo"})
  if args.image:
    task_env.setdefault("USER", getpass.getuser())   # ch-run needs it
    for name in container.HOST_PYTHON_ENV:
      task_env.pop(name, None)
  if args.network_interface:
    task_env["HOROVOD_GLOO_IFACE"] = args.network_interface
  # -n and -N: srun inside sbatch would take SLURM_NTASKS and more from the
  # batch environment; --label tags each line with its rank, and
  # --kill-on-bad-exit=0 lets rank 0 finish its checkpoint after another
  # rank has stopped first.
  argv = ["srun", "--nodes={}".format(len(plan)), "--ntasks={}".format(size),
          "--distribution=block", "--kill-on-bad-exit=0", "--label",
          "--wait={}".format(TASK_WAIT), "--mpi=none",
          *signals.blocked_start(),
          *container.task_command(args.image, binds), "-m",
          "legacy_hvd.launch.slurm_task", args.module, *trainer_args]
  mark = run_outcome.results_mark(directory)
  code, lines = run_outcome.run_reading(argv, received.started, env=task_env)
  if rendezvous:
    rendezvous.stop()
  why = code and requeue_reason(received, code, job)
  if why:
    log("job {}: ranks stopped at step {} ({}); requeueing".format(
        job, checkpoint_state.latest_step(directory), why))
    slurm_healing.requeue(job)
    return 0
  outcome = lines.outcome(code, directory, mark)
  if outcome.kind == run_outcome.TRAINED:
    if ledger.restarts:
      path = run_outcome.record_restarts(directory, ledger.restarts)
      log("job {}: trained after {} restart{} after a loss{}".format(
          job, len(ledger.restarts), "" if len(ledger.restarts) == 1
          else "s", "; listed in " + path if path else ""))
    return 0
  if received.stop_asked:
    log("job {}: ranks stopped at step {} ({}: a stop); not requeued".format(
        job, checkpoint_state.latest_step(directory),
        signal.Signals(received.stop_asked).name))
    return 128 + received.stop_asked
  if outcome.kind == run_outcome.LOST:
    return requeue_after_loss(outcome, ledger, args, job, plan, directory)
  if outcome.kind == run_outcome.FAILED:
    cli.fail("job {}: a rank failed on its own error (its line above); not "
             "requeued: it would fail again".format(job), RANK_FAILED)
  return code if code > 0 else 128 - code


def requeue_after_loss(outcome, ledger, args, job, plan, directory):
  """The ranks named a lost host or rank: requeued without the node that failed
  (not one whose ranks merely ended of the loss), within --max_restarts
  across requeues; else one line, FAILED."""
  step = checkpoint_state.latest_step(directory)
  dropped = sorted(outcome.dropped)
  if len(ledger.restarts) >= args.max_restarts:
    cli.fail("job {}: lost {}; restart budget used up ({} of "
             "--max_restarts={}); the job stops at step {} in {}: resubmit "
             "it{} to resume".format(
                 job, outcome.what, len(ledger.restarts), args.max_restarts,
                 step, directory,
                 " with --exclude={}".format(",".join(
                     sorted(set(ledger.excluded) | set(dropped))))
                 if dropped or ledger.excluded else ""),
             cli.LOST_PEER)
  ledger.add(dict(restart=len(ledger.restarts) + 1, resumed_at_step=step,
                  lost=outcome.what, dropped=outcome.dropped,
                  hosts=hostlists.hosts_arg(plan), requeued_at=time.time()),
             dropped, len(plan))
  # With --min_nodes, the range Slurm may place the requeued job on.
  nodes = ((args.min_nodes, ledger.nodes)
           if args.min_nodes and args.min_nodes < ledger.nodes else None)
  log("job {}: lost {}; restart {} of --max_restarts={}: requeueing{}{}, "
      "to resume at step {} in {}".format(
          job, outcome.what, len(ledger.restarts), args.max_restarts,
          " without " + ",".join(ledger.excluded) if ledger.excluded else
          " on the same nodes (none failed: its ranks ended alone)",
          " on {} to {} nodes".format(*nodes) if nodes else "", step,
          directory))
  error = slurm_healing.requeue(job, ledger.excluded, nodes)
  if error:
    cli.fail("job {}: the requeue failed: {}".format(job, error),
             cli.LOST_PEER)
  return 0


def wait_for_leftovers(run_id, job, nodes):
  """A requeued job starts its ranks only once no process of its earlier runs
  is left on this allocation's nodes (Slurm ended the job on the others)."""
  left = leftovers.wait_gone(run_id, nodes, on_node, LEFTOVER_SECONDS)
  if left:
    cli.fail("job {}: processes of its earlier run still running after "
             "{} s: {}; not started".format(job, LEFTOVER_SECONDS,
                                             leftovers.describe(left)),
             cli.LOST_PEER)


def on_node(node, command):
  """The argv that runs shell `command` on `node` of this allocation."""
  return ["srun", "--nodes=1", "--ntasks=1", "--nodelist=" + node,
          "--mpi=none", "--quiet", "sh", "-c", command]


def stop_before_start(received, job, directory):
  """A signal before srun started: requeued at once, or ended as asked."""
  code = 128 + (received.stop_asked or received.first)
  why = requeue_reason(received, code, job)
  step = checkpoint_state.latest_step(directory)
  where = ("at step {} in ".format(step) if step else "in ") + directory
  if why:
    log("job {}: {} before the ranks started; requeueing, to resume {}"
        .format(job, why, where))
    slurm_healing.requeue(job)
    return 0
  log("job {}: {} before the ranks started; no rank was started".format(
      job, signal.Signals(code - 128).name))
  return code


def requeue_reason(received, code, job):
  """Why the job should run again, or None: the early warning (SIGUSR1), or a
  SIGTERM to the tasks alone while the job still runs (a pre-emption's
  GraceTime; scancel and a time limit have ended the job in Slurm)."""
  if received.stop_asked:
    return None
  if received.requeue or code == STOPPED_FOR_REQUEUE:
    return "SIGUSR1"
  if code == STOPPED_BY_TERM and job_state(job) == "RUNNING":
    return "SIGTERM while the job runs: pre-empted"
  return None


def job_state(job):
  """Slurm's JobState of `job` (RUNNING, CANCELLED, TIMEOUT, ...)."""
  out = subprocess.run(["scontrol", "-o", "show", "job", job],
                       stdout=subprocess.PIPE, universal_newlines=True).stdout
  m = re.search(r"\bJobState=(\S+)", out)
  return m.group(1) if m else None


def preflight(hosts, trainer_args, interface, env):
  """legacy_hvd.launch.preflight on the allocation's hosts; ends the job if a
  check fails."""
  values = absl_flags.FlagValues()
  absl_flags.DEFINE_string("data_dir", None, "", flag_values=values)
  values(["trainer"] + list(trainer_args), known_only=True)
  argv = [sys.executable, "-m", "legacy_hvd.launch.preflight", "-H", hosts,
          "--model_dir=" + output_flags.model_dir_of(trainer_args),
          "--nohorovodrun"]   # srun starts the ranks
  if values.data_dir:
    argv.append("--data_dir=" + values.data_dir)
  if interface:
    argv.append("--network_interface=" + interface)
  if subprocess.run(argv, env=env).returncode:
    raise cli.UserError("the pre-flight check failed on {} (its lines "
                        "above); the job was not started".format(hosts))


def main(argv=None):
  """Launches the job, in the batch script."""
  argv = sys.argv[1:] if argv is None else argv
  # First: a signal in the set-up must not end this shell; one held blocked
  # across the batch script's exec (slurm/train.sbatch) comes now.
  received = Received().install()
  received.replay(os.environ.get(EARLY_SIGNAL))
  try:
    args, trainer_args = parse(argv)
    check_trainer_flags(args.module, trainer_args)
    binds = image_binds(args, trainer_args)
    # This node runs rank 0 (srun --distribution=block): its model directory.
    writable.require(container.outside(
        output_flags.model_dir_of(trainer_args), binds), env=dict(
            os.environ, **leftovers.mark(run_of(os.environ), 0)),
                     nothing="no rank was started")
    why = slurm_healing.cannot_shrink(args.min_nodes, os.environ)
    if why:
      cli.fail(why + "; no rank was started", cli.USAGE_ERROR)
    return launch(args, trainer_args, binds, dict(os.environ), received)
  except cli.UserError as e:
    cli.fail(str(e))


def run():
  """Console-script entry point (legacy-hvd-slurm)."""
  sys.exit(main())


if __name__ == "__main__":
  run()
