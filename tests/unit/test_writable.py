"""What a launcher checks it can write before any rank starts
(legacy_hvd/launch/writable.py): each place not writable is named in one
line, with what to do, and nothing is started."""
import json
import os
import socket
import subprocess
import sys

import pytest

from legacy_hvd.common import model_dir_claim
from legacy_hvd.launch import writable
from tests.helpers import REPO


@pytest.fixture
def not_a_dir(tmp_path):
  """A regular file: nothing can be made below it (root included)."""
  path = tmp_path / "file"
  path.write_text("")
  return str(path)


def test_each_place_not_writable_is_one_part_of_the_line(tmp_path, not_a_dir):
  fine = {"HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
  assert writable.problems(str(tmp_path / "new" / "model"), horovodrun=True,
                           env=fine) == []
  assert writable.problems(None, env={}) == []   # TMPDIR unset: /tmp
  found = writable.problems(
      os.path.join(not_a_dir, "model"), horovodrun=True,
      env={"HOME": os.path.join(not_a_dir, "home"), "TMPDIR": "/nonexistent"})
  assert found == [
      "--model_dir={0}/model: {0} is a file; expected a directory".format(
          not_a_dir),
      "TMPDIR=/nonexistent: not a directory this user can write; expected "
      "one it can (or TMPDIR unset: /tmp)",
      "HOME={0}/home: horovodrun writes its cache in {0}/home/.horovod, which "
      "this user cannot; expected a writable HOME (e.g. HOME=$TMPDIR for the "
      "job)".format(not_a_dir)]
  # Only horovodrun writes HOME.
  assert writable.problems(None, env={"HOME": not_a_dir}) == []


@pytest.mark.parametrize("launcher, args, nothing", [
    ("legacy_hvd.launch.supervise", ["-H", "localhost:1", "--"],
     "nothing was started"),
    ("legacy_hvd.launch.workers", ["-H", "localhost:1", "--"],
     "no worker was started"),
    ("legacy_hvd.launch.slurm", [], "no rank was started"),
])
def test_the_launchers_say_it_before_anything_starts(launcher, args, nothing,
                                                     tmp_path, not_a_dir):
  model_dir = os.path.join(not_a_dir, "model")
  trainer = (["python", "-m", "legacy_hvd.train"] if args else [])
  done = subprocess.run(
      [sys.executable, "-m", launcher, *args, *trainer,
       "--model_dir=" + model_dir, "--max_steps=5"],
      cwd=REPO, env=dict(os.environ, TMPDIR=str(tmp_path / "gone"),
                         HOME=os.path.join(not_a_dir, "home")),
      capture_output=True, text=True, timeout=60)
  assert done.returncode == 1 and done.stdout == "", done.stderr
  lines = done.stderr.splitlines()
  assert len(lines) == 1 and lines[0].startswith(launcher + ": error: "), \
      done.stderr
  assert "--model_dir=" + model_dir in lines[0] and "TMPDIR=" in lines[0]
  assert ("HOME=" in lines[0]) == (launcher == "legacy_hvd.launch.supervise")
  assert lines[0].endswith(nothing)
  assert not (tmp_path / "gone").exists()



def test_a_model_dir_another_job_holds_is_refused_but_not_by_its_requeue(
    tmp_path):
  model_dir = tmp_path / "model"
  model_dir.mkdir()

  def launch(launcher, args, slurm_job):
    trainer = ["python", "-m", "legacy_hvd.train"] if args else []
    return subprocess.run(
        [sys.executable, "-m", launcher, *args, *trainer,
         "--model_dir=" + str(model_dir)], cwd=REPO,
        env=dict(os.environ, SLURM_JOB_ID=slurm_job), capture_output=True,
        text=True, timeout=60)
  with subprocess.Popen(["sleep", "60"]) as other:
    held = dict(model_dir_claim.this_job({}), pid=other.pid,
                process_start=None, run="slurm-4242", slurm_job="4242")
    (model_dir / model_dir_claim.FILE).write_text(json.dumps(held))
    refused = [launch("legacy_hvd.launch.supervise",
                      ["-H", "localhost:1", "--"], "1"),
               launch("legacy_hvd.launch.slurm", [], "1")]
    requeued = launch("legacy_hvd.launch.slurm", [], "4242")
    other.kill()
  for done in refused:
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, \
        done.stderr
    assert (f": error: --model_dir={model_dir}: in use by another job (rank 0 "
            f"on {socket.gethostname()}, pid {other.pid}, Slurm job 4242, "
            "since ") in done.stderr
  # Job 4242 requeued: its own claim does not stop it (Slurm's allocation,
  # missing here, does).
  assert "in use" not in requeued.stderr
  assert "not inside a Slurm allocation" in requeued.stderr, requeued.stderr
