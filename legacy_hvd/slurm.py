"""Runs a trainer under Slurm, every rank a task of one `srun` step.

    sbatch -N 2 --ntasks-per-node=2 slurm/train.sbatch \\
        [--module=legacy_hvd.train_tf2] [--preflight] [trainer flags]
    # slurm/train.sbatch: exec python -m legacy_hvd.slurm "$@"

In the batch script, on the allocation's first node (where rank 0 runs),
it does what horovodrun does before it starts ranks over ssh, then starts
them with srun instead:
  1. reads the allocation: its nodes and tasks per node (the -H of
     horovodrun, e.g. lh1:2,lh2:2);
  2. optionally runs the pre-flight check on those hosts (--preflight);
  3. starts Horovod's Gloo rendezvous server for that plan;
  4. runs `srun -n N python -m legacy_hvd.slurm --task MODULE ...`: each
     task gives itself the HOROVOD_* variables of its slot (rank =
     SLURM_PROCID) and execs the trainer. Every rank is a task of the
     step: Slurm signals it on scancel, time limit and pre-emption, and
     nothing of it outlives the job;
  5. ends as Slurm should show the job: COMPLETED when every rank ended
     well; requeued (`scontrol requeue`) when the ranks were stopped by
     the early warning, SIGUSR1, or by a pre-emption's SIGTERM; otherwise
     the ranks' code (FAILED; CANCELLED or TIMEOUT as Slurm decided).

Signals: SIGUSR1 to the batch shell (`--signal=B:USR1@N`, `scancel
--batch --signal=USR1`) is forwarded to the ranks through srun; SIGUSR1 to
the tasks (`--signal=USR1@N`) reaches them directly. Either way every rank
stops at one agreed step, rank 0 checkpoints, and the job requeues itself;
the requeued run resumes there. SIGTERM reaches the ranks from Slurm
itself (and again from srun: the trainers take a repeated SIGTERM as the
same request); they stop and checkpoint the same way within KillWait.

The cluster side: imports no trainer, TensorFlow or Horovod's frameworks
(only Horovod's launcher pieces). Python 3.7-compatible.
"""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys

from absl import flags as absl_flags

from flags import output as output_flags
from legacy_hvd import checkpoint_state
from legacy_hvd import cli

TRAINERS = ("legacy_hvd.train", "legacy_hvd.train_tf2",
            "legacy_hvd.train_keras")
PLAN = "LEGACY_HVD_SLURM_HOSTS"   # the launcher's plan, read by each task
STOPPED_FOR_REQUEUE = 128 + signal.SIGUSR1   # a rank's code after SIGUSR1
STOPPED_BY_TERM = 128 + signal.SIGTERM
# Seconds srun lets the other tasks run once one has ended: the trainers end
# every rank themselves (an agreed stop, or the lost-host line after Gloo's
# time-out); this bounds a rank that hangs anyway.
TASK_WAIT = 120


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


def hosts_arg(plan):
  """[(node, tasks)] -> horovodrun's -H form, "lh1:2,lh2:2"."""
  return ",".join("{}:{}".format(node, tasks) for node, tasks in plan)


def slots(hosts):
  """Horovod's SlotInfo of every rank for "lh1:2,lh2:2": ranks fill one
  host after the other, as srun's default (block) distribution does."""
  from horovod.runner.common.util import hosts as horovod_hosts
  parsed = horovod_hosts.parse_hosts(hosts)
  return horovod_hosts.get_host_assignments(
      parsed, sum(h.slots for h in parsed))


# -- the batch script's side -------------------------------------------------
class Signals:
  """What the batch shell received: a requeue request (SIGUSR1, forwarded
  to the ranks) and whether Slurm is ending the job (SIGTERM)."""

  def __init__(self):
    self.requeue = False
    self.terminated = False
    self.srun = None

  def install(self):
    signal.signal(signal.SIGUSR1, self._usr1)
    signal.signal(signal.SIGTERM, self._term)
    return self

  def _usr1(self, signum, frame):
    del frame
    self.requeue = True
    if self.srun is not None and self.srun.poll() is None:
      # srun forwards it to every task of the step.
      self.srun.send_signal(signum)

  def _term(self, signum, frame):
    # Slurm signals the tasks itself (and srun forwards it once more).
    del signum, frame
    self.terminated = True


def parser():
  """The launcher's own options (docs/slurm.md lists them)."""
  options = argparse.ArgumentParser(
      prog="legacy_hvd.slurm", allow_abbrev=False,
      description="Runs a legacy_hvd trainer on this Slurm allocation; "
      "every other argument goes to the trainer.")
  options.add_argument("--module", default=TRAINERS[0], choices=TRAINERS,
                       help="the trainer to run")
  options.add_argument("--preflight", action="store_true",
                       help="run legacy_hvd.preflight on the allocation's "
                       "hosts first (it logs in with ssh)")
  options.add_argument("--network_interface", default=None,
                       help="the interface Gloo uses (default: the one "
                       "holding the address each node's name resolves to)")
  return options


def log(message):
  print("legacy_hvd.slurm: " + message, file=sys.stderr, flush=True)


def launch(args, trainer_args, env):
  """Runs the ranks as one srun step; returns the batch script's code."""
  # First: a warning during the set-up must not end this shell (SIGUSR1's
  # default action).
  received = Signals().install()
  plan = allocation(env)
  hosts = hosts_arg(plan)
  size = sum(tasks for _, tasks in plan)
  job = env["SLURM_JOB_ID"]
  restart = int(env.get("SLURM_RESTART_COUNT", "0"))
  directory = output_flags.model_dir_of(trainer_args)
  step = checkpoint_state.latest_step(directory)
  # The restart count and the step it resumes at, in one line.
  log("job {}, restart {}: {} ranks on {}; {} {}".format(
      job, restart, size, hosts,
      "resuming at step {} in".format(step) if step else "starting in",
      directory))
  if args.preflight:
    preflight(hosts, trainer_args, args.network_interface, env)

  from horovod.runner.http.http_server import RendezvousServer
  # Horovod: the rendezvous server that every rank's Gloo context meets
  # at, on this (rank 0's) node, as horovodrun runs it.
  rendezvous = RendezvousServer()
  port = rendezvous.start()
  rendezvous.init(slots(hosts))
  task_env = dict(env, **{
      PLAN: hosts,
      "HOROVOD_GLOO_RENDEZVOUS_ADDR": socket.gethostbyname(
          socket.gethostname()),
      "HOROVOD_GLOO_RENDEZVOUS_PORT": str(port),
      "HOROVOD_CONTROLLER": "gloo",
      "HOROVOD_CPU_OPERATIONS": "gloo",
      "PYTHONUNBUFFERED": "1",
  })
  if args.network_interface:
    task_env["HOROVOD_GLOO_IFACE"] = args.network_interface
  # -n and -N: srun inside sbatch would take SLURM_NTASKS and more from the
  # batch environment; --label tags each line with its rank, and
  # --kill-on-bad-exit=0 lets rank 0 finish its checkpoint after another
  # rank has stopped first.
  argv = ["srun", "--nodes={}".format(len(plan)), "--ntasks={}".format(size),
          "--distribution=block", "--kill-on-bad-exit=0", "--label",
          "--wait={}".format(TASK_WAIT), "--mpi=none",
          sys.executable, "-m", "legacy_hvd.slurm", "--task", args.module,
          *trainer_args]
  received.srun = subprocess.Popen(argv, env=task_env)
  code = received.srun.wait()
  rendezvous.stop()
  if code == 0:
    return 0
  why = requeue_reason(received, code, job)
  if why:
    log("job {}: ranks stopped at step {} ({}); requeueing".format(
        job, checkpoint_state.latest_step(directory), why))
    subprocess.run(["scontrol", "requeue", job], check=False)
    return 0
  return code if code > 0 else 128 - code


def requeue_reason(received, code, job):
  """Why the job should run again, or None: the ranks were stopped by the
  early warning (SIGUSR1 to the batch shell or to them), or by a SIGTERM
  to the tasks alone while the job still runs (a pre-emption's GraceTime;
  scancel and a time limit have already ended the job in Slurm)."""
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
  """legacy_hvd.preflight on the allocation's hosts; ends the job if any
  check fails (its lines say which)."""
  values = absl_flags.FlagValues()
  absl_flags.DEFINE_string("data_dir", None, "", flag_values=values)
  values(["trainer"] + list(trainer_args), known_only=True)
  argv = [sys.executable, "-m", "legacy_hvd.preflight", "-H", hosts,
          "--model_dir=" + output_flags.model_dir_of(trainer_args)]
  if values.data_dir:
    argv.append("--data_dir=" + values.data_dir)
  if interface:
    argv.append("--network_interface=" + interface)
  if subprocess.run(argv, env=env).returncode:
    raise cli.UserError("the pre-flight check failed on {} (its lines "
                        "above); the job was not started".format(hosts))


# -- each task's side ----------------------------------------------------------
def exec_task(module, trainer_args, env):
  """In an srun task: become rank SLURM_PROCID of the plan, running
  `python -m module trainer_args`."""
  rank = int(env["SLURM_PROCID"])
  slot = slots(env[PLAN])[rank]
  node = env.get("SLURMD_NODENAME", socket.gethostname())
  if slot.hostname != node:
    raise cli.UserError(
        "rank {} runs on {}, but the plan puts it on {}: run the ranks with "
        "srun's block distribution (the default)".format(rank, node,
                                                         slot.hostname))
  # Horovod: the variables horovodrun gives each rank of its slot.
  env = dict(env, HOROVOD_HOSTNAME=slot.hostname,
             HOROVOD_RANK=str(slot.rank), HOROVOD_SIZE=str(slot.size),
             HOROVOD_LOCAL_RANK=str(slot.local_rank),
             HOROVOD_LOCAL_SIZE=str(slot.local_size),
             HOROVOD_CROSS_RANK=str(slot.cross_rank),
             HOROVOD_CROSS_SIZE=str(slot.cross_size))
  if "HOROVOD_GLOO_IFACE" not in env:
    env["HOROVOD_GLOO_IFACE"] = interface_of(socket.gethostbyname(node))
  os.execve(sys.executable, [sys.executable, "-m", module, *trainer_args],
            env)


def interface_of(address):
  """The name of this node's interface holding `address`."""
  import psutil   # Horovod's launcher needs it too
  for name, addresses in psutil.net_if_addrs().items():
    if any(a.family == socket.AF_INET and a.address == address
           for a in addresses):
      return name
  raise cli.UserError(
      "{} resolves to {}, which no interface of this node holds: its name "
      "must resolve to its address on the job's network (or pass "
      "--network_interface)".format(socket.gethostname(), address))


def main(argv=None):
  """Launches the job (in the batch script), or execs one rank (--task)."""
  argv = sys.argv[1:] if argv is None else argv
  try:
    if argv[:1] == ["--task"]:
      exec_task(argv[1], argv[2:], os.environ)
    args, trainer_args = parser().parse_known_args(argv)
    return launch(args, trainer_args, dict(os.environ))
  except cli.UserError as e:
    cli.fail(str(e))


def run():
  """Console-script entry point (legacy-hvd-slurm)."""
  sys.exit(main())


if __name__ == "__main__":
  run()
