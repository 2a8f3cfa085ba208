"""The performance knobs: CPU placement per local rank, plain-TF mode, and
Horovod's timeline and autotune working with the trainer."""
import json
import os
import re
import subprocess
import sys

import pytest

from legacy_hvd.rank import placement
from tests.helpers import (REPO, assert_ok, own_lines, rank_pid, read_results,
                           run_module, start, wait_for)
from tests.helpers.shared_runs import SHARED_STEPS

PLACEMENT = re.compile(r"Rank (\d) \(local \d of (\d)\): (pinned to|unpinned, "
                       r"on) cores ([\d,-]+); (\d+) intra-op, (\d+) inter-op")


@pytest.mark.parametrize("num_cores, local_size, shares", [
    (2, 1, [[0, 1]]),
    (2, 2, [[0], [1]]),
    (2, 4, [[0], [0], [1], [1]]),
    (8, 3, [[0, 1], [2, 3, 4], [5, 6, 7]]),
    (4, 3, [[0], [1], [2, 3]]),
])
def test_each_local_rank_gets_a_disjoint_share_of_the_cores(
    num_cores, local_size, shares):
  cores = list(range(num_cores))
  assert [placement.share_of_cores(cores, r, local_size)
          for r in range(local_size)] == shares


def test_core_lists_print_like_taskset():
  assert placement._ranges([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
  assert placement._ranges([3]) == "3"


def placements(output):
  """{rank: (pinned, cores string, intra, inter)} from the ranks' logs."""
  return {int(m[1]): (m[3] == "pinned to", m[4], int(m[5]), int(m[6]))
          for m in PLACEMENT.finditer(output)}


def test_ranks_are_pinned_to_disjoint_cores(tf1_run):
  placed = placements(tf1_run.output)
  cores = placement.available_cores()
  expected = {rank: (True, placement._ranges(placement.share_of_cores(cores, rank, 2)),
                     len(placement.share_of_cores(cores, rank, 2)),
                     len(placement.share_of_cores(cores, rank, 2)))
              for rank in (0, 1)}
  assert placed == expected
  if len(cores) >= 2:
    assert placed[0][1] != placed[1][1]


def allowed_cores(pid):
  """{thread id: its Cpus_allowed_list} for every thread of process `pid`."""
  allowed = {}
  for task in os.listdir(f"/proc/{pid}/task"):
    try:
      with open(f"/proc/{pid}/task/{task}/status") as f:
        status = f.read()
    except OSError:   # the thread ended meanwhile
      continue
    allowed[int(task)] = re.search(r"Cpus_allowed_list:\s*(\S+)",
                                   status).group(1)
  return allowed


@pytest.mark.parametrize("module", [
    "legacy_hvd.train",
    # The TF2 twins on the default stack: trainers.legacy_stack_runs_graph_jobs.
    pytest.param("legacy_hvd.train_tf2", marks=pytest.mark.one_stack)])
def test_a_rank_is_pinned_but_horovods_threads_run_anywhere(tmp_path, module):
  cores = placement.available_cores()
  if len(cores) < 2:
    pytest.fail("needs 2 cores to tell a pinned thread from a free one")
  model_dir = tmp_path / "model"
  log_path = tmp_path / "job.log"
  with open(log_path, "w") as log:
    job = start(2, module, [f"--model_dir={model_dir}", "--max_steps=100000",
                            "--log_every_n_steps=10"], log)
    try:
      wait_for(lambda: "step 20:" in log_path.read_text(), 180, "step 20")
      for rank in (0, 1):
        pid = rank_pid(model_dir, rank)
        share = placement._ranges(placement.share_of_cores(cores, rank, 2))
        allowed = allowed_cores(pid)
        # The main thread and the TF threads it started: the rank's share.
        assert allowed[pid] == share
        assert list(allowed.values()).count(share) >= 2
        # Horovod's background thread and Gloo's, started in hvd.init():
        # every core, so a collective never waits for the rank's kernels.
        assert placement._ranges(cores) in allowed.values(), allowed
    finally:
      job.terminate()
      job.wait(timeout=60)


def test_unpinned_ranks_keep_every_core_and_share_threads(tf2_run):
  cores = placement.available_cores()
  threads = max(1, len(cores) // 2)
  assert placements(tf2_run.output) == {
      rank: (False, placement._ranges(cores), threads, threads)
      for rank in (0, 1)}


def test_nohorovod_trains_one_plain_process(tmp_path):
  process = run_module("legacy_hvd.train", [f"--model_dir={tmp_path}",
                                            "--nohorovod", "--max_steps=10"])
  assert_ok(process)
  results = read_results(tmp_path)
  assert results["world_size"] == 1 and results["steps"] == 10
  assert results["flags"]["horovod"] is False
  assert 0 < results["test_accuracy"] <= 1


@pytest.mark.parametrize("module, args, env, named", [
    ("legacy_hvd.train", ["--nohorovod"], {"HOROVOD_SIZE": "2"},
     "--nohorovod"),
    ("legacy_hvd.train", ["--nohorovod", "--backward_passes_per_step=2"], {},
     "--backward_passes_per_step"),
    ("legacy_hvd.train_tf2", ["--nohorovod"], {}, "--nohorovod"),
])
def test_nohorovod_misuse_is_one_line(tmp_path, module, args, env, named):
  process = run_module(module, [*args, f"--model_dir={tmp_path / 'm'}"],
                       env=env, timeout=60)
  assert process.returncode != 0
  lines = own_lines(process.stderr)
  assert len(lines) == 1 and named in lines[0], process.stderr
  assert not (tmp_path / "m").exists()


def test_timeline_and_autotune_record_the_gradient_allreduces(tf1_run):
  # tf1_run ran with HOROVOD_TIMELINE and HOROVOD_AUTOTUNE (conftest.py).
  timeline = tf1_run.files / "timeline.json"
  autotune_log = tf1_run.files / "autotune.csv"
  summary = subprocess.run(
      [sys.executable, "tools/timeline_summary.py", str(timeline), "--json"],
      cwd=REPO, capture_output=True, text=True, timeout=60)
  assert_ok(summary)
  rows = json.loads(summary.stdout)
  allreduced = {row["tensor"]: row["count"] for row in rows
                if row["phase"] == "ALLREDUCE" and "gradients" in row["tensor"]}
  # One allreduce per step for each of the model's four gradients.
  assert len(allreduced) == 4 and set(allreduced.values()) == {
      SHARED_STEPS}, allreduced
  assert all(row["total_ms"] >= 0 for row in rows)
  # Autotune logged the parameters it tried, each with a score.
  header, *samples = autotune_log.read_text().strip().splitlines()
  assert header.split(",")[-1] == "score" and samples, autotune_log.read_text()


def test_timeline_summary_rejects_what_is_not_a_timeline(tmp_path):
  bad = tmp_path / "notes.txt"
  bad.write_text("not json\n")
  process = subprocess.run(
      [sys.executable, "tools/timeline_summary.py", str(bad)], cwd=REPO,
      capture_output=True, text=True, timeout=60)
  assert process.returncode == 1
  lines = process.stderr.strip().splitlines()
  assert len(lines) == 1 and "notes.txt" in lines[0], process.stderr
