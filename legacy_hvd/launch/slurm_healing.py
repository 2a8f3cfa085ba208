"""A Slurm job that heals itself: after a lost rank or node, the supervisor's
decision taken by the job's own launcher, and kept across requeues.

    ledger = slurm_healing.Ledger(model_dir, job_id)   # this job's restarts
    ledger.restarts, ledger.excluded, ledger.nodes
    ledger.add(record, dropped, nodes)                 # kept in model_dir
    slurm_healing.requeue(job_id, excluded=ledger.excluded,
                          nodes=(min_nodes, ledger.nodes))
    slurm_healing.cannot_shrink(min_nodes, os.environ)  # why not, or None

The count lives in the model directory (slurm-restarts.json, one job's at a
time), not in memory: the launcher that decides the next restart is a new
process on a new allocation. A requeue for the time limit or a pre-emption
is Slurm's routine and counts nothing; only a restart after a loss spends
--max_restarts.

A running job's excluded nodes cannot be changed ("Job is no longer pending
execution"), but a requeued one's can, and is pending at once: the batch
script requeues its own job, then, within KillWait of Slurm's SIGTERM
(which it takes as a recorded signal), updates ExcNodeList, and NumNodes
to a range when the job may shrink; the job cannot start again before the
script has ended, so it never starts without the update. No Horovod, no
TensorFlow; Python 3.7-compatible.
"""
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
    """Records one more restart, leaving out the nodes `dropped` from now
    on; `nodes`: the allocation's node count (the first one is kept)."""
    self.restarts.append(record)
    self.excluded = sorted(set(self.excluded) | set(dropped))
    self.nodes = self.nodes or nodes
    os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
    json_files.write_json(self.path, {
        "job": self.job, "restarts": self.restarts,
        "excluded": self.excluded, "nodes": self.nodes})


def cannot_shrink(min_nodes, env):
  """Why a job submitted with this batch environment could not shrink to
  --min_nodes after a loss, or None. With --ntasks-per-node Slurm keeps the
  job's node count at its task count over that many a node: an update to
  NumNodes=min-max is taken and does nothing, and the requeued job waits
  for as many nodes as before (seen on Slurm 22.05). A total task count
  (-n) leaves the nodes free."""
  if min_nodes and env.get("SLURM_NTASKS_PER_NODE"):
    return ("--min_nodes={} needs the job submitted with a total task count "
            "(sbatch -N 2 -n 4), not --ntasks-per-node={}: Slurm keeps a "
            "requeued job's node count at its tasks over that many a node, "
            "so it could not shrink".format(
                min_nodes, env["SLURM_NTASKS_PER_NODE"]))
  return None


def requeue(job_id, excluded=(), nodes=None):
  """`scontrol requeue` of this job, then its pending copy updated: the
  `excluded` nodes left out, and NumNodes=min-max for `nodes` = (min, max),
  the range it may shrink within. Returns scontrol's error line, or None."""
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
  """Runs scontrol ARGS (again, if the job's SIGTERM ended it); its error
  line, or None. In a session of its own: Slurm signals the job's process
  group when the requeue ends it."""
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
