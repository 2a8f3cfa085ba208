"""The supervisor (legacy_hvd/launch/supervise.py) on the test hosts: a host lost
mid-run is left out and the job relaunched on the others from the last
checkpoint, once; with no restart left, one line and exit 75. Bad input is
refused before anything starts (no horovodrun, no hosts)."""
import os
import re
import subprocess
import sys
import time

import pytest

from legacy_hvd.launch import supervise
from legacy_hvd.common import checkpoint_state
from legacy_hvd.launch import run_outcome
from tests.helpers import hostjobs
from tests.helpers import error_lines, read_results, run_module

# A killed host's loss is seen at once (its connections close); the test
# shortens Gloo's time-out anyway, as a cut cable or a stuck rank would
# need it (tests/hosts/test_hosts_faults.py).
GLOO_TIMEOUT = 10
FIRST_CHECKPOINT = 20
# The kill comes once rank 0 has checkpointed (step 20), long before the
# end; the relaunch trains the rest on the hosts left.
STEPS = 80
RUN_TIMEOUT = 300   # seconds for both supervised jobs (2 cores, shared)
# The launcher side, the same on both stacks; the trainers' own loss and
# resume run on both in tests/hosts/test_hosts_faults.py.
pytestmark = pytest.mark.one_stack
RESTART = re.compile(r"^legacy_hvd\.launch\.supervise: restart (\d+) of (\d+): "
                     r"lost "
                     r"(.*); relaunching (\d+) ranks? on (\S+), resuming at "
                     r"step (\d+) in (\S+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def data_dir(test_hosts):
  return hostjobs.put_data(test_hosts, ["lh1", "lh2", "lh3"])


class Supervised(object):
  """The supervisor, started inside lh1 over a trainer (the TF1 job) in
  <scratch>/<name>, in the background."""

  def __init__(self, cluster, name, data_dir, supervisor_args, lost_host,
               log_path, module="legacy_hvd.train"):
    self.cluster = cluster
    self.model_dir = os.path.join(cluster.scratch, name)
    self.outside = cluster.hosts[0].path(self.model_dir)
    self.lost_host = lost_host
    self.log_path = log_path
    self.killed = None     # when lost_host's ranks were killed
    self.restarted = None  # when the restart line came, after that
    argv = [sys.executable, "-m", "legacy_hvd.launch.supervise",
            "--network_interface=eth0", *supervisor_args, "--",
            sys.executable, "-m", module,
            "--model_dir=" + self.model_dir, "--data_dir=" + data_dir,
            "--max_steps={}".format(STEPS),
            "--save_checkpoints_steps={}".format(FIRST_CHECKPOINT),
            "--log_every_n_steps=20"]
    with open(log_path, "w") as log:
      self.job = cluster.hosts[0].popen(
          argv, env={"HOROVOD_GLOO_TIMEOUT_SECONDS": str(GLOO_TIMEOUT)},
          stdout=log, stderr=subprocess.STDOUT)

  def step(self):
    """Kills the ranks of `lost_host` once rank 0 has checkpointed; True
    while the supervisor runs."""
    if not self.killed and checkpoint_state.latest_step(self.outside) > 0:
      assert self.cluster.host(self.lost_host).kill(self.model_dir), (
          "no rank on " + self.lost_host)
      self.killed = time.monotonic()
    if self.killed and not self.restarted and RESTART.search(
        self.log_path.read_text()):
      self.restarted = time.monotonic()
    return self.job.poll() is None

  def end(self):
    """(exit code, output, model_dir as the test sees it)."""
    if self.job.poll() is None:
      self.job.kill()
    self.job.wait()
    with open(self.log_path) as f:
      return self.job.returncode, f.read(), self.outside


@pytest.fixture(scope="module")
def runs(test_hosts, data_dir, tmp_path_factory):
  """Two supervised jobs at once (their waits overlap): 3 hosts x 1 rank
  losing lh3 after rank 0's first checkpoint, with one restart allowed;
  and 2 hosts x 1 rank, named by a host-discovery script, losing lh2, with
  none."""
  logs = tmp_path_factory.mktemp("supervised")
  discover = logs / "discover.sh"
  discover.write_text("#!/bin/sh\necho lh1:1\necho lh2:1\n")
  discover.chmod(0o755)
  started = time.monotonic()
  jobs = {}
  try:
    jobs["relaunched"] = Supervised(
        test_hosts, "supervised", data_dir,
        ["-H", "lh1:1,lh2:1,lh3:1", "--min_np=2", "--max_restarts=1"],
        "lh3", logs / "relaunched.log")
    jobs["budget"] = Supervised(
        test_hosts, "budget", data_dir,
        ["--host_discovery_script={}".format(discover), "--max_restarts=0"],
        "lh2",
        logs / "budget.log")
    deadline = started + RUN_TIMEOUT
    while time.monotonic() < deadline:
      if not [job for job in jobs.values() if job.step()]:
        break
      time.sleep(0.2)
  finally:
    ended = {name: job.end() for name, job in jobs.items()}
  print("supervised: both ended {:.1f} s after the start".format(
      time.monotonic() - started))
  job = jobs["relaunched"]
  if job.killed and job.restarted:
    print("relaunched: the restart line {:.1f} s after lh3's kill".format(
        job.restarted - job.killed))
  return ended


@pytest.fixture(scope="module")
def relaunched(runs):
  return runs["relaunched"]


def test_a_lost_host_is_left_out_and_the_job_finishes(relaunched):
  code, output, model_dir = relaunched
  assert code == 0, output[-6000:]
  restarts = RESTART.findall(output)
  assert len(restarts) == 1, output[-6000:]
  number, budget, lost, np, hosts, step, _ = restarts[0]
  assert (number, budget, np, hosts) == ("1", "1", "2", "lh1:1,lh2:1")
  assert lost.startswith("host lh3 (rank 2: process ended)"), lost
  assert int(step) >= FIRST_CHECKPOINT
  # The relaunch resumed from that checkpoint, with the smaller world.
  assert "Resuming from global step {}".format(step) in output
  results = read_results(model_dir)
  assert results["world_size"] == 2
  assert results["start_step"] == int(step)
  assert results["steps"] == STEPS
  assert results["weights_in_sync"]
  assert "]<stderr>:Traceback" not in output


def test_results_list_the_restart(relaunched):
  _, output, model_dir = relaunched
  step = int(RESTART.search(output).group(6))
  restarts = read_results(model_dir)["restarts"]
  assert len(restarts) == 1
  assert {k: v for k, v in restarts[0].items() if k != "seconds"} == {
      "restart": 1, "resumed_at_step": step, "hosts": "lh1:1,lh2:1",
      "np": 2, "lost": "host lh3 (rank 2: process ended)",
      "dropped": {"lh3": "process ended"}}
  assert "legacy_hvd.launch.supervise: trained after 1 restart; listed in" in output


def test_the_restart_budget_used_up_ends_in_one_line(runs, test_hosts):
  code, output, model_dir = runs["budget"]
  assert code == supervise.REQUEUE == 75, output[-6000:]
  lines = [l for l in error_lines(output)
           if l.startswith("legacy_hvd.launch.supervise:")]
  step = checkpoint_state.latest_step(model_dir)
  assert lines == [
      "legacy_hvd.launch.supervise: error: lost host lh2 (rank 1: process ended); "
      "restart budget used up (0 of --max_restarts=0); the job stops at "
      "step {} in {}: requeue it".format(
          step, os.path.join(test_hosts.scratch, "budget"))], output[-6000:]
  assert step >= FIRST_CHECKPOINT
  # The survivor reported to the supervisor; the one error line is its.
  assert "legacy_hvd.launch.supervise decides what follows" in output
  assert not [line for line in error_lines(output)
              if "legacy_hvd.train: error:" in line], output[-6000:]
  assert not RESTART.search(output)
  assert not os.path.exists(os.path.join(model_dir, "results.json"))


@pytest.mark.parametrize("args,expected", [
    (["-H", "lh1:x", "--", "python"], "-H lh1:x: item 'lh1:x': the slot "
     "count 'x' is not a number"),
    (["-H", "lh1:1,lh1:1", "--", "python"], "lh1 is listed twice"),
    (["-H", "lh1:1,lh2:1", "--min_np=3", "--", "python"],
     "--min_np=3: the hosts hold only 2 slots (lh1:1,lh2:1)"),
    (["-H", "lh1:1"], "no command to run: give it after --"),
    (["--min_np=2", "--", "python"], "give the hosts with exactly one of "
     "-H/--hosts, --hostfile and --host_discovery_script"),
])
def test_bad_input_is_one_line_and_nothing_starts(args, expected):
  process = run_module("legacy_hvd.launch.supervise", args, timeout=60)
  assert process.returncode == 2
  assert process.stdout == ""
  lines = process.stderr.splitlines()
  assert len(lines) == 1 and lines[0].startswith(
      "legacy_hvd.launch.supervise: error: "), process.stderr
  assert expected in lines[0], lines[0]


@pytest.mark.parametrize("describe,dropped", [
    # A whole host: its ranks ended, or it is unreachable.
    ("host lh2 (ranks 2, 3: processes ended)", {"lh2": "processes ended"}),
    ("host lh2 (rank 1: host unreachable)", {"lh2": "host unreachable"}),
    # A stuck rank on a host whose other rank answers: left out too.
    ("rank 2 of 2 on host lh2 (not answering: stopped or stuck)",
     {"lh2": "rank 2 of 2 on host lh2 (not answering: stopped or stuck)"}),
    # A rank that died of the loss, on a host that is up: kept.
    ("host lh2 (ranks 2, 3: processes ended); rank 0 of 2 on host lh1 "
     "(process ended)", {"lh2": "processes ended"}),
    ("rank 0 on host lh1 failed", {}),
])
def test_the_hosts_a_relaunch_leaves_out(describe, dropped):
  # (The lost lines of docs/faults.md, as roster.Roster.describe words them.)
  assert run_outcome.lost_hosts(describe) == dropped
