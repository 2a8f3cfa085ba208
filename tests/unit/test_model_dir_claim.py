"""A model directory claimed by the job that trains in it
(legacy_hvd/common/model_dir_claim.py): a second job is refused in one line
naming the first; a claim its job left (killed, its host lost, or an earlier
round of the same launcher's run) does not block."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from legacy_hvd.common import cli
from legacy_hvd.common import model_dir_claim
from tests.helpers import REPO


@pytest.fixture(autouse=True)
def release_after(monkeypatch):
  monkeypatch.setattr(model_dir_claim, "RENEW_SECONDS", 0.05)
  yield
  model_dir_claim.release()


def claimed(model_dir, env=None):
  """claim()'s refusal, its one line; None when it claimed the directory."""
  try:
    model_dir_claim.claim(model_dir, env)
  except cli.UserError as e:
    return str(e)
  return None


def left_by(model_dir, **fields):
  """A claim file as another job's rank 0 would have written it."""
  claim = dict(model_dir_claim.this_job({}), since="2026-12-08 00:00:00",
               **fields)
  path = model_dir_claim.path_in(str(model_dir))
  with open(path, "w") as f:
    json.dump(claim, f)
  return path


def test_a_running_job_on_this_host_holds_the_directory(tmp_path):
  other = subprocess.Popen(["sleep", "30"])
  left_by(tmp_path, pid=other.pid, process_start=None)
  line = claimed(str(tmp_path))
  assert line == (
      f"--model_dir={tmp_path}: in use by another job (rank 0 on "
      f"{socket.gethostname()}, pid {other.pid}, since 2026-12-08 00:00:00); "
      "expected a model directory no other job trains in: wait for that job "
      "to end, or give another --model_dir")
  assert model_dir_claim.in_use(str(tmp_path)) == line   # launchers too
  other.kill()
  time.sleep(0.2)
  # Killed, not yet reaped by its parent (a zombie): the directory is free.
  assert claimed(str(tmp_path)) is None
  other.wait()


def test_a_pid_reused_by_another_process_does_not_hold_it(tmp_path):
  left_by(tmp_path, pid=os.getppid(), process_start=1)
  assert claimed(str(tmp_path)) is None


def test_another_hosts_claim_holds_while_it_is_renewed(tmp_path):
  path = left_by(tmp_path, host="node-7", pid=1, slurm_job="4242")
  # A launcher cannot tell whether a job on another host is alive.
  assert model_dir_claim.in_use(str(tmp_path)) is None
  renewing = threading.Event()

  def renew():
    renewals = 0
    while not renewing.wait(0.01):
      renewals += 1
      left_by(tmp_path, host="node-7", pid=1, slurm_job="4242",
              renewals=renewals)
  renewer = threading.Thread(target=renew)
  renewer.start()
  line = claimed(str(tmp_path))
  renewing.set()
  renewer.join()
  assert "(rank 0 on node-7, pid 1, Slurm job 4242, since 2026-12-08 " \
      "00:00:00); expected" in line
  # Not renewed while rank 0 watched: killed, or its host lost.
  started = time.monotonic()
  assert claimed(str(tmp_path)) is None
  assert time.monotonic() - started >= 3 * model_dir_claim.RENEW_SECONDS


def test_a_container_sharing_the_hostname_is_watched_as_another_host(
    tmp_path):
  # Its pid is another pid namespace's: it says nothing here.
  left_by(tmp_path, place="another boot pid:[1]", pid=os.getpid())
  assert model_dir_claim.in_use(str(tmp_path)) is None
  assert claimed(str(tmp_path)) is None   # never renewed


def test_the_same_run_takes_its_own_claim_back(tmp_path):
  left_by(tmp_path, host="node-7", pid=1, run="slurm-4242")
  requeued = {cli.ROUND: "slurm-4242.1"}
  assert claimed(str(tmp_path), requeued) is None
  assert json.loads(open(model_dir_claim.path_in(str(tmp_path))).read())[
      "run"] == "slurm-4242"


def test_the_claim_is_renewed_then_removed_and_never_anothers(
    tmp_path, monkeypatch):
  path = model_dir_claim.path_in(str(tmp_path))
  assert claimed(str(tmp_path)) is None
  mine = json.loads(open(path).read())
  assert (mine["host"], mine["pid"]) == (socket.gethostname(), os.getpid())
  time.sleep(0.3)
  assert json.loads(open(path).read())["renewals"] >= 2
  model_dir_claim.release()
  assert not os.path.exists(path)
  # Taken over by another job meanwhile: its claim stays, this job ends.
  ended = []
  monkeypatch.setattr(model_dir_claim, "_end_taken_over",
                      lambda path, found: ended.append(found["host"]))
  assert claimed(str(tmp_path)) is None
  left_by(tmp_path, host="node-7", pid=1)
  time.sleep(0.3)
  assert ended == ["node-7"]
  model_dir_claim.release()
  assert json.loads(open(path).read())["host"] == "node-7"


def test_a_job_whose_claim_was_taken_over_stops_in_one_line(tmp_path):
  job = subprocess.Popen(
      [sys.executable, "-c", "import sys, time; "
       "from legacy_hvd.common import model_dir_claim as claims; "
       "claims.RENEW_SECONDS = 0.05; claims.claim(sys.argv[1]); "
       "print('claimed', flush=True); time.sleep(30)", str(tmp_path)],
      cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  assert job.stdout.readline() == "claimed\n"
  left_by(tmp_path, host="node-7", pid=1)
  assert job.wait(timeout=10) == cli.INPUT_ERROR
  assert job.stderr.read() == (
      f"-c: error: --model_dir={tmp_path}: taken over by another job (rank 0 "
      "on node-7, pid 1) after this one did not renew its claim for 0 s; this "
      "job stops\n")
  assert json.loads(open(model_dir_claim.path_in(str(tmp_path))).read())[
      "host"] == "node-7"
