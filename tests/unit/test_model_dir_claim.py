"""A model directory claimed by the job that trains in it
(legacy_hvd/common/model_dir_claim.py): a second job is refused in one line
naming the first; a claim its job left (killed, its host lost, or an earlier
round of the same launcher's run) does not block."""
import json
import os
import socket
import subprocess
import threading
import time

import pytest

from legacy_hvd.common import cli
from legacy_hvd.common import model_dir_claim


@pytest.fixture(autouse=True)
def release_after(monkeypatch):
  monkeypatch.setattr(model_dir_claim, "RENEW_SECONDS", 0.05)
  yield
  model_dir_claim.release()


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
  line = model_dir_claim.claim(str(tmp_path))
  assert line == (
      f"--model_dir={tmp_path}: in use by another job (rank 0 on "
      f"{socket.gethostname()}, pid {other.pid}, since 2026-12-08 00:00:00); "
      "expected a model directory no other job trains in: wait for that job "
      "to end, or give another --model_dir")
  assert model_dir_claim.in_use(str(tmp_path)) == line   # launchers too
  other.kill()
  time.sleep(0.2)
  # Killed, not yet reaped by its parent (a zombie): the directory is free.
  assert model_dir_claim.claim(str(tmp_path)) is None
  other.wait()


def test_a_pid_reused_by_another_process_does_not_hold_it(tmp_path):
  left_by(tmp_path, pid=os.getppid(), process_start=1)
  assert model_dir_claim.claim(str(tmp_path)) is None


def test_another_hosts_claim_holds_while_it_is_renewed(tmp_path):
  path = left_by(tmp_path, host="node-7", pid=1, slurm_job="4242")
  # A launcher cannot tell whether a job on another host is alive.
  assert model_dir_claim.in_use(str(tmp_path)) is None
  renewing = threading.Event()

  def renew():
    while not renewing.wait(0.01):
      os.utime(path)
  renewer = threading.Thread(target=renew)
  renewer.start()
  line = model_dir_claim.claim(str(tmp_path))
  renewing.set()
  renewer.join()
  assert "(rank 0 on node-7, pid 1, Slurm job 4242, since 2026-12-08 " \
      "00:00:00); expected" in line
  # Not renewed while rank 0 watched: killed, or its host lost.
  started = time.monotonic()
  assert model_dir_claim.claim(str(tmp_path)) is None
  assert time.monotonic() - started >= 3 * model_dir_claim.RENEW_SECONDS


def test_a_claim_older_than_the_lapse_is_free_at_once(tmp_path, monkeypatch):
  path = left_by(tmp_path, host="node-7", pid=1)
  old = time.time() - model_dir_claim.LAPSE_SECONDS - 1
  os.utime(path, (old, old))
  monkeypatch.setattr(model_dir_claim, "RENEW_SECONDS", 60)   # no watching
  assert model_dir_claim.claim(str(tmp_path)) is None


def test_the_same_run_takes_its_own_claim_back(tmp_path):
  left_by(tmp_path, host="node-7", pid=1, run="slurm-4242")
  requeued = {cli.ROUND: "slurm-4242.1"}
  assert model_dir_claim.claim(str(tmp_path), requeued) is None
  assert json.loads(open(model_dir_claim.path_in(str(tmp_path))).read())[
      "run"] == "slurm-4242"


def test_the_claim_is_renewed_then_removed_and_never_anothers(tmp_path):
  path = model_dir_claim.path_in(str(tmp_path))
  assert model_dir_claim.claim(str(tmp_path)) is None
  mine = json.loads(open(path).read())
  assert (mine["host"], mine["pid"]) == (socket.gethostname(), os.getpid())
  old = time.time() - 20
  os.utime(path, (old, old))
  time.sleep(0.3)
  assert time.time() - os.stat(path).st_mtime < 5   # renewed
  model_dir_claim.release()
  assert not os.path.exists(path)
  # Taken over by another job meanwhile: its claim stays.
  assert model_dir_claim.claim(str(tmp_path)) is None
  left_by(tmp_path, host="node-7", pid=1)
  model_dir_claim.release()
  assert json.loads(open(path).read())["host"] == "node-7"
