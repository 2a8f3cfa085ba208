"""A real Slurm on running test hosts: slurmctld on lh1, slurmd on each host.

    python tools/testhosts.py up --hosts 2
    python tools/testslurm.py up        # munged, slurmctld, slurmd; nodes idle
    nsenter -t <lh1's anchor pid> -n -u -m --wdns=$PWD bash
    sbatch -N 2 --ntasks-per-node=2 slurm/train.sbatch --max_steps=100
    python tools/testslurm.py down      # the daemons stopped, the state removed

    with testhosts.Cluster(hosts=2) as cluster, Slurm(cluster) as slurm:
      slurm.run(["sbatch", "--parsable", ...]).stdout   # inside lh1
      slurm.job(job_id)["JobState"]                      # scontrol show job
    # the daemons are stopped here, after failures and time-outs too

Debian's slurmctld, slurmd, slurm-client and munge (22.05 on bookworm) are
installed with apt-get when missing, with policy-rc.d forbidding the
packages to start their daemons on the machine itself. Every daemon runs
inside a host, as on a cluster: one munged per host (each host's /run is
its own, so each has its own socket), slurmctld on lh1 (the bridge has no
address in the root namespace: clients run inside a host too), one slurmd
per host. The configuration directory is bind-mounted over /etc/slurm in
every host, so `sbatch` there needs no SLURM_CONF.

What the configuration needs on these hosts, and why:
- CgroupPlugin=cgroup/v1 (cgroup.conf): inside a host /sys/fs/cgroup is
  empty and slurmd fails at autodetecting the cgroup version otherwise;
  proctrack/pgid and task/none need no cgroup at all.
- %n in slurmd's spool, pid and log paths: the file system is shared.
- AuthInfo=cred_expire=10 and sched_interval=2: a requeued job may start
  again only cred_expire+1 s after it ended (120 s by default).
- munged refuses log and seed files in directories others may write
  (/tmp): they live in munge's own Debian directories, one name per host.

Python 3.7-compatible: the TF 1.15 suite imports it too.
"""
import argparse
import contextlib
import os
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tools import testhosts  # noqa: E402  (run as a script too)

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
BINARIES = ("/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch",
            "/usr/sbin/munged")
MUNGE_KEY = "/etc/munge/munge.key"
MUNGE_USER = "munge"
MUNGE_LOG_DIR = "/var/log/munge"
MUNGE_SEED_DIR = "/var/lib/munge"
CONF_DIR = "/etc/slurm"          # where every host sees our configuration
CPUS_PER_NODE = 2                # slots per node (not checked: overrides)
KILL_WAIT = 10                   # seconds from SIGTERM to SIGKILL
CRED_EXPIRE = 10                 # seconds; a requeued job waits this + 1
GRACE_TIME = 15                  # seconds a pre-empted job gets before TERM
READY_SECONDS = 30               # for the daemons and the nodes to be idle

SLURM_CONF = """\
# tools/testslurm.py: a Slurm on the test hosts of slot {slot}.
ClusterName=lhvd{slot}
SlurmctldHost={controller}({controller_address})
AuthType=auth/munge
CredType=cred/munge
AuthInfo=cred_expire={cred_expire}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={dir}/state
SlurmctldPidFile={dir}/slurmctld.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdSpoolDir={dir}/spool-%n
SlurmdPidFile={dir}/slurmd-%n.pid
SlurmdLogFile={dir}/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
JobRequeue=1
KillWait={kill_wait}
MinJobAge=600
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
NodeName={nodes} CPUs={cpus} State=UNKNOWN
PartitionName=batch Nodes={nodes} Default=YES MaxTime=INFINITE State=UP PriorityTier=1 GraceTime={grace_time}
PartitionName=urgent Nodes={nodes} MaxTime=INFINITE State=UP PriorityTier=2 PreemptMode=OFF
"""
CGROUP_CONF = "CgroupPlugin=cgroup/v1\n"


def ensure_packages():
  """Slurm and munge, installed with apt-get when missing (no daemon is
  started on the machine itself)."""
  # The packages would start munged, slurmctld and slurmd on the machine.
  testhosts.install_packages(PACKAGES, BINARIES, "testslurm")


class Slurm(testhosts.UpDown):
  """Slurm on the first `nodes` hosts of a running testhosts.Cluster
  (all by default); a context manager. The controller runs on the first."""

  def __init__(self, cluster, nodes=None):
    self.cluster = cluster
    self.hosts = cluster.hosts[:nodes] if nodes else list(cluster.hosts)
    self.controller = self.hosts[0]
    self.dir = os.path.join(cluster.dir, "slurm")
    self.conf_dir = os.path.join(self.dir, "etc")

  @property
  def nodes(self):
    return _node_list([h.name for h in self.hosts])

  # -- using it -------------------------------------------------------------
  def run(self, argv, host=None, env=None, timeout=60, check=False):
    """Runs `argv` (sbatch, squeue, ...) inside `host` (the controller's by
    default); a CompletedProcess with text output."""
    return (host or self.controller).run(argv, env=env, timeout=timeout,
                                         check=check)

  def job(self, job_id):
    """`scontrol show job` as a dict (JobState, Restarts, ...); {} once
    Slurm has forgotten the job (MinJobAge after its end)."""
    out = self.run(["scontrol", "-o", "show", "job", str(job_id)]).stdout
    fields = {}
    for word in out.split():
      key, _, value = word.partition("=")
      fields.setdefault(key, value)
    return fields

  def queued(self, job_id):
    """True while `job_id` is in squeue (pending, running or completing)."""
    out = self.run(["squeue", "-h", "-j", str(job_id), "-o", "%T"]).stdout
    return bool(out.strip())

  # -- up and down ----------------------------------------------------------
  def up(self):
    """Writes the configuration and starts munged, slurmctld and slurmd;
    returns once every node is idle."""
    ensure_packages()
    self.down()
    with contextlib.ExitStack() as undo:
      undo.callback(self.down)   # a failure half-way leaves nothing running
      os.makedirs(os.path.join(self.dir, "state"))
      os.makedirs(self.conf_dir)
      for host in self.hosts:
        os.makedirs(os.path.join(self.dir, "spool-" + host.name))
      self._write_conf()
      _ensure_munge_key()
      for host in self.hosts:
        self._start_munged(host)
        testhosts._sh(host.command(["mount", "--bind", self.conf_dir,
                                    CONF_DIR], cwd="/"))
      testhosts._sh(self.controller.command(["slurmctld"], cwd="/"))
      for host in self.hosts:
        testhosts._sh(host.command(["slurmd"], cwd="/"))
      testhosts._wait_until(self._idle, READY_SECONDS,
                            "Slurm's nodes to be idle")
      undo.pop_all()
    return self

  def down(self):
    """Stops the daemons and removes the configuration and state;
    idempotent (also after a killed run, or with the hosts gone)."""
    for host in self.hosts:
      if not testhosts._alive(host.anchor):
        continue
      for pid in self._daemon_pids(host):
        with contextlib.suppress(ProcessLookupError):
          os.kill(pid, signal.SIGKILL)
      host.run(["umount", CONF_DIR], timeout=10)
      for path in self._munge_files(host):
        with contextlib.suppress(OSError):
          os.remove(path)
    shutil.rmtree(self.dir, ignore_errors=True)

  def _idle(self):
    out = self.run(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=10).stdout
    states = dict(line.split() for line in out.splitlines() if line.strip())
    return all(states.get(h.name) == "idle" for h in self.hosts)

  def _write_conf(self):
    with open(os.path.join(self.conf_dir, "slurm.conf"), "w") as f:
      f.write(SLURM_CONF.format(
          slot=self.cluster.slot, controller=self.controller.name,
          controller_address=self.controller.address, dir=self.dir,
          nodes=self.nodes, cpus=CPUS_PER_NODE, kill_wait=KILL_WAIT,
          cred_expire=CRED_EXPIRE, grace_time=GRACE_TIME))
    with open(os.path.join(self.conf_dir, "cgroup.conf"), "w") as f:
      f.write(CGROUP_CONF)

  def _munge_files(self, host):
    name = "lhvd{}-{}".format(self.cluster.slot, host.name)
    return (os.path.join(MUNGE_LOG_DIR, name + ".log"),
            os.path.join(MUNGE_SEED_DIR, name + ".seed"))

  def _start_munged(self, host):
    log, seed = self._munge_files(host)
    # As Debian's service runs it: as the munge user, which owns its
    # directories (munged refuses ones another user owns).
    testhosts._sh(host.command(["install", "-d", "-o", MUNGE_USER, "-g",
                                MUNGE_USER, "/run/munge"], cwd="/"))
    testhosts._sh(host.command(
        ["runuser", "-u", MUNGE_USER, "--", "munged",
         "--key-file=" + MUNGE_KEY, "--log-file=" + log,
         "--seed-file=" + seed], cwd="/"))

  def _daemon_pids(self, host):
    """This host's munged, slurmctld, slurmd and slurmstepd processes."""
    return [pid for pid in host.pids()
            if os.path.basename(testhosts._cmdline(pid).split(" ")[0])
            in ("munged", "slurmctld", "slurmd", "slurmstepd")]


def _ensure_munge_key():
  """munge's key; the package makes one, an interrupted install may not."""
  if not os.path.exists(MUNGE_KEY):
    testhosts._sh(["mungekey", "--create", "--keyfile=" + MUNGE_KEY])


def _node_list(names):
  """Slurm's host list for lh1, lh2, ... ("lh[1-2]")."""
  numbers = [int(n[2:]) for n in names]
  if numbers == list(range(numbers[0], numbers[0] + len(numbers))):
    return "lh[{}-{}]".format(numbers[0], numbers[-1]) if len(numbers) > 1 \
        else names[0]
  return ",".join(names)


def attach(slot=0):
  """A Slurm object for the test hosts of `slot` (None when none are up)."""
  cluster = testhosts.attach(slot)
  return Slurm(cluster) if cluster else None


def main(argv=None):
  parser = argparse.ArgumentParser(
      prog="testslurm", description=__doc__.splitlines()[0])
  parser.add_argument("command", choices=("up", "down", "status"))
  parser.add_argument("--slot", type=int, default=0,
                      help="the test hosts' slot (testhosts.py --slot)")
  args = parser.parse_args(argv)
  try:
    slurm = attach(args.slot)
    if slurm is None:
      raise testhosts.HarnessError(
          "no test hosts in slot {}; first: python tools/testhosts.py up "
          "--slot {}".format(args.slot, args.slot))
    if args.command == "up":
      started = time.monotonic()
      slurm.up()
      print("testslurm: up in {:.1f} s: slurmctld on {}, nodes {}".format(
          time.monotonic() - started, slurm.controller.name, slurm.nodes))
      print("  enter lh1:  nsenter -t {} -n -u -m --wdns={} bash".format(
          slurm.controller.anchor, testhosts.REPO))
      print("  then:       sbatch -N 2 --ntasks-per-node=2 slurm/train.sbatch "
            "--data_dir=... --model_dir=...")
      print("  down:       python tools/testslurm.py down")
    elif args.command == "down":
      slurm.down()
      print("testslurm: slot {}: Slurm down".format(args.slot))
    else:
      print(slurm.run(["sinfo", "-N"], timeout=10).stdout, end="")
  except testhosts.HarnessError as e:
    print("testslurm: error: {}".format(e), file=sys.stderr)
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main())
