"""Write failures in the model directory on real file systems: a small
tmpfs that fills up, and the directory remounted read-only under a running
job. Each ends the job in one line naming the file and the cause, with no
rank traceback and nothing half-written; the `checkpoint` state file names
a complete checkpoint and the same command resumes from it once the file
system takes writes again (legacy_hvd/faults/failed_writes.py, docs/faults.md).

The tests mount and unmount their own file systems, so they need root (CI
runs as root); without it they are skipped, saying so.
"""
import contextlib
import errno
import os
import re
import subprocess

import pytest
import tensorflow.compat.v1 as tf

from legacy_hvd.common import checkpoint_state
from legacy_hvd.faults import failed_writes
from tests.helpers import (assert_ok, error_lines, horovodrun, read_results,
                           start, wait_for)
from tests.helpers.trainers import TRAINERS

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="mounts a tmpfs and remounts it read-only: "
    "needs root (CI runs as root)")

DISK_MB = 16        # the tmpfs; all of it free again for the resumed run
ROOM_MB = 4         # free for the failing run: a few checkpoints, no more
FAIL_SECONDS = 120  # the failing run ends by itself within this
SAVE_EVERY = 20


@contextlib.contextmanager
def mounted_tmpfs(path, size_mb):
  """A tmpfs of `size_mb` at `path`, unmounted (with anything mounted on
  it) afterwards, after failures too."""
  os.makedirs(path)
  subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs",
                  str(path)], check=True)
  try:
    yield path
  finally:
    # A bind mount on the model directory first, then the tmpfs; lazily, in
    # case a rank of a timed-out job still holds a file open on it.
    for mount_point in (path / "model", path):
      if os.path.ismount(mount_point):
        subprocess.run(["umount", "-l", str(mount_point)], check=True)


def fill(disk, leave_mb):
  """Fills `disk` but `leave_mb` MB with one file; returns its path."""
  filler = disk / "filler"
  stat = os.statvfs(disk)
  size = stat.f_bavail * stat.f_frsize - leave_mb * 2**20
  with open(filler, "wb") as f:
    f.write(b"\0" * size)
  return filler


def the_write_failure(output, cause):
  """The one line naming the failed file and `cause` ("no space left on
  device (ENOSPC)"), after checking it is the only error line besides the
  other rank's "rank 0 ... failed" (and that no rank printed a traceback);
  (the failed checkpoint's step, the last complete one's, the line)."""
  errors = error_lines(output)
  mine = [line for line in errors if cause in line]
  assert len(mine) == 1, output[-4000:]
  others = [line for line in errors if line not in mine]
  assert all("rank 0 on host" in line and "failed (see its error)" in line
             for line in others) and len(others) <= 1, others
  assert "]<stderr>:Traceback" not in output
  found = re.search(r"-(\d+)(\.meta)?: " + re.escape(cause) + r"; the job "
                    r"stops; the last complete checkpoint is step (\d+), "
                    "named in ", mine[0])
  assert found, mine[0]
  step, saved = int(found.group(1)), int(found.group(3))
  # tf.train.Saver writes a checkpoint's graph (.meta) after naming it in
  # the state file: a failure there leaves that checkpoint the complete one.
  assert step > saved or (found.group(2) and step == saved), mine[0]
  return step, saved, mine[0]


def assert_complete_and_named(model_dir, step):
  """The state file names checkpoint `step`, and every tensor of it reads."""
  assert checkpoint_state.latest_step(str(model_dir)) == step
  reader = tf.train.load_checkpoint(str(model_dir))
  for name in reader.get_variable_to_shape_map():
    reader.get_tensor(name)   # raises on a short or damaged file


def fail_on_full_disk(disk, trainer):
  """Runs `trainer` on `disk` with ROOM_MB left until a save fails; checks
  the one line, that nothing partial is left and that the state file names a
  complete checkpoint; (the model dir, the filler, the step saved last)."""
  filler = fill(disk, ROOM_MB)
  model_dir = disk / "model"
  failed = horovodrun(2, trainer.module, [
      f"--model_dir={model_dir}", "--max_steps=300", "--log_every_n_steps=10",
      f"--save_checkpoints_steps={SAVE_EVERY}"], timeout=FAIL_SECONDS)
  assert failed.returncode != 0
  step, saved, line = the_write_failure(failed.stdout + failed.stderr,
                                        "no space left on device (ENOSPC)")
  assert f"{model_dir}/{trainer.checkpoint}-{step}" in line
  assert step in (saved, saved + SAVE_EVERY)
  assert failed_writes.partial_files(str(model_dir)) == []
  assert not [name for name in os.listdir(model_dir) if "_temp" in name]
  assert_complete_and_named(model_dir, saved)
  return model_dir, filler, saved


@needs_root
def test_full_then_read_only_model_dir_each_end_in_one_line_and_resume(
    tmp_path, isolated_cache):
  """The TF1 job: a full disk, then (the space freed, the job resumed) the
  directory remounted read-only, then writable again: resumed to the end."""
  with mounted_tmpfs(tmp_path / "disk", DISK_MB) as disk:
    model_dir, filler, saved = fail_on_full_disk(disk, TRAINERS[0])
    os.remove(filler)

    args = [f"--model_dir={model_dir}",
            f"--save_checkpoints_steps={SAVE_EVERY}"]
    log_path = tmp_path / "job.log"
    with open(log_path, "w") as log:
      job = start(2, "legacy_hvd.train",
                  args + ["--max_steps=100000", "--log_every_n_steps=10"],
                  log)
      try:
        wait_for(lambda: checkpoint_state.latest_step(str(model_dir))
                 > saved, FAIL_SECONDS, "a checkpoint after resuming")
        # A mount of its own over the directory, remounted read-only: the
        # kernel refuses to remount the tmpfs itself while the job has files
        # open for writing on it (its event file).
        subprocess.run(["mount", "--bind", str(model_dir), str(model_dir)],
                       check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(model_dir)],
                       check=True)
        job.wait(timeout=FAIL_SECONDS)
      finally:
        job.kill()
    output = log_path.read_text()
    assert f"Resuming from global step {saved}" in output   # space freed
    step, resaved, line = the_write_failure(
        output, "read-only file system (EROFS)")
    assert f"{model_dir}/model.ckpt-{step}" in line
    assert resaved > saved
    assert_complete_and_named(model_dir, resaved)
    # What the failed save left, it could not remove: the line says so.
    left = failed_writes.partial_files(str(model_dir))
    assert bool(left) == ("the next start removes it" in line), (left, line)

    subprocess.run(["umount", str(model_dir)], check=True)   # writable again
    resumed = horovodrun(2, "legacy_hvd.train",
                         args + [f"--max_steps={resaved + SAVE_EVERY}"])
    assert_ok(resumed)
    assert bool(left) == ("Removed what an interrupted write left"
                          in resumed.stdout + resumed.stderr)
    assert failed_writes.partial_files(str(model_dir)) == []
    results = read_results(model_dir)
    assert results["start_step"] == resaved and results["weights_in_sync"]


# The TF1 job's full disk is in the test above; the other trainers write
# their checkpoints and results through the same code (write_faults), so one
# failing run each shows the same line and the same state left. The
# Estimator job saves with the TF1 job's Saver, Keras fit with the TF2
# loop's CheckpointManager (eager_job). On the TF 1.15 stack the TF1 job's
# test above shows the Saver's path, and the TF2 twins' are the default
# stack's (trainers.legacy_stack_runs_graph_jobs).
@needs_root
@pytest.mark.one_stack
@pytest.mark.parametrize("trainer", TRAINERS[1:], ids=str)
def test_full_model_dir_ends_in_one_line(tmp_path, trainer, isolated_cache):
  with mounted_tmpfs(tmp_path / "disk", DISK_MB) as disk:
    fail_on_full_disk(disk, trainer)


@pytest.mark.parametrize("error, path, number", [
    # TF 2's graph error: the op's stack first, then the kernel's message.
    (tf.errors.ResourceExhaustedError(
        None, None, "Graph execution error:\n\nDetected at node 'save/SaveV2'"
        "\n  File \"/x/legacy_hvd/train.py\", line 1\n"
        "/m/model.ckpt-40_temp/part-00000-of-00001.data-00000-of-00001"
        ".tempstate1234; No space left on device"),
     "/m/model.ckpt-40", errno.ENOSPC),
    (tf.errors.PermissionDeniedError(
        None, None, "/m/model.ckpt-40_temp_0123abcd; Read-only file system"),
     "/m/model.ckpt-40", errno.EROFS),
    # tf.train.Saver's words when the directory was removed.
    (ValueError("Parent directory of /m/model.ckpt-40 doesn't exist, can't "
                "save."), "/m/model.ckpt-40", errno.ENOENT),
    (OSError(errno.EDQUOT, "Disk quota exceeded", "/m/results.json.tmp-77"),
     "/m/results.json", errno.EDQUOT),
])
def test_the_failed_file_and_cause_are_read_from_the_error(error, path,
                                                           number):
  found, cause = failed_writes.cause(error)
  assert (failed_writes.written_name(found), cause) == (path, number)


def test_an_error_that_is_no_write_failure_is_left_alone():
  assert failed_writes.cause(tf.errors.InvalidArgumentError(
      None, None, "Horovod has been shut down")) is None
