"""A Slurm job that heals itself: after a lost rank or node, the supervisor's
decision taken by the job's own launcher, and kept across requeues.

The count lives in the model directory (the next launcher is a new process
on a new allocation); only a restart after a loss spends --max_restarts. A
running job's excluded nodes cannot be changed, a requeued one's can: the
script requeues its own job, then, within KillWait of Slurm's SIGTERM,
updates ExcNodeList (and NumNodes). No Horovod, no TensorFlow; Python 3.7."""
import os
import subprocess
import time

from legacy_hvd.common import json_files

LEDGER_FILE = "slurm-restarts.json"
UPDATE_TRIES = 5   # Slurm's SIGTERM to the job may end one scontrol


class Ledger(object):
  """The restarts job `job_id` has had after losses, read from (and added
  to) <model_dir>/slurm-restarts.json; another job's file counts nothing."""

  def __init__(self, model_dir, job_id):
    self.path = os.path.join(model_dir, LEDGER_FILE)
    self.job = str(job_id)
    kept = json_files.read_json(self.path) or {}
    if kept.get("job") != self.job:
      kept = {}
    self.restarts = kept.get("restarts", [])   # one dict a restart
    self.excluded = kept.get("excluded", [])   # nodes left out, sorted
    self.nodes = kept.get("nodes")             # the job's first node count

  def add(self, record, dropped, nodes):
    """Records one more restart, leaving out the nodes `dropped` from now on;
    `nodes`: the allocation's node count (the first one is kept)."""
    self.restarts.append(record)
    self.excluded = sorted(set(self.excluded) | set(dropped))
    self.nodes = self.nodes or nodes
    os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
    json_files.write_json(self.path, {
        "job": self.job, "restarts": self.restarts,
        "excluded": self.excluded, "nodes": self.nodes})


def cannot_shrink(min_nodes, env):
  """Why this batch environment could not shrink to --min_nodes, or None: with
  --ntasks-per-node Slurm keeps the node count, and an update to
  NumNodes=min-max does nothing (seen on Slurm 22.05); -n leaves it free."""
  if min_nodes and env.get("SLURM_NTASKS_PER_NODE"):
    return ("--min_nodes={} needs the job submitted with a total task count "
            "(sbatch -N 2 -n 4), not --ntasks-per-node={}: Slurm keeps a "
            "requeued job's node count at its tasks over that many a node, "
            "so it could not shrink".format(
                min_nodes, env["SLURM_NTASKS_PER_NODE"]))
  return None


def requeue(job_id, excluded=(), nodes=None):
  """`scontrol requeue` of this job, then its pending copy updated: `excluded`
  left out, NumNodes=min-max for `nodes`. scontrol's error line, or None."""
  requeued = _scontrol(["requeue", str(job_id)])
  if requeued:
    return requeued
  update = []
  if excluded:
    update.append("ExcNodeList=" + ",".join(excluded))
  if nodes:
    update.append("NumNodes={}-{}".format(*nodes))
  if not update:
    return None
  return _scontrol(["update", "JobId={}".format(job_id)] + update)


def _scontrol(args):
  """Runs scontrol ARGS (again, if the job's SIGTERM ended it); its error line,
  or None. In a session of its own: a requeue signals the process group."""
  said = None
  for _ in range(UPDATE_TRIES):
    done = subprocess.run(["scontrol"] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True,
                          start_new_session=True)
    if done.returncode == 0:
      return None
    said = done.stdout.strip() or "exit {}".format(done.returncode)
    time.sleep(0.5)
  return "scontrol {}: {}".format(" ".join(args), said)
