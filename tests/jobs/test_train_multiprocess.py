"""The trainer under horovodrun -np 2: rank-0-only outputs, resume, sync."""
import os
import stat

from tests.helpers import (assert_ok, assert_periodic_evaluations, horovodrun,
                           read_results)
from tests.helpers.shared_runs import (RANK_UMASK, SHARED_EVAL_EVERY,
                                      SHARED_STEPS, copy_run)


def written_by_other_ranks(model_dir):
  return [os.path.join(d, f) for d, _, files in os.walk(model_dir)
          for f in files
          if not os.stat(os.path.join(d, f)).st_mode & stat.S_IRGRP]


def test_a_run_writes_rank0_only_outputs_and_ends_in_sync(tf1_run, user):
  model_dir = tf1_run.model_dir
  if user is not None:   # else the suite's own user is not root
    # Trained by the user the suite made, on data it cannot write.
    assert os.stat(model_dir / "results.json").st_uid == user.uid != 0
    data = os.stat(tf1_run.data_dir)
    assert data.st_uid != user.uid and not data.st_mode & 0o022
  results = read_results(model_dir)
  assert results["world_size"] == 2 and results["global_batch"] == 128
  assert results["start_step"] == 0 and results["steps"] == SHARED_STEPS
  assert results["test_examples"] == 2000
  assert results["test_accuracy"] > 0.2       # chance is 0.1
  assert results["data_source"] == tf1_run.data_dir
  # Both ranks end with identical weights, bit for bit.
  digests = results["weight_digests"]
  assert len(digests) == 2 and digests[0] == digests[1]
  assert results["weights_in_sync"] is True
  assert (model_dir / "checkpoint").exists()
  assert (model_dir / "world.json").exists()
  assert any(f.name.startswith("events.out.tfevents")
             for f in model_dir.iterdir())
  assert written_by_other_ranks(model_dir) == []
  assert "Test accuracy" in tf1_run.output


def test_a_run_evaluates_periodically_on_every_rank(tf1_run):
  assert_periodic_evaluations(tf1_run.model_dir, tf1_run.files / "steps.jsonl",
                              tf1_run.output, SHARED_EVAL_EVERY, SHARED_STEPS)


def test_a_second_run_resumes(tf1_run, tmp_path):
  model_dir = copy_run(tf1_run, tmp_path / "model")
  digests = read_results(model_dir)["weight_digests"]
  second = horovodrun(2, "legacy_hvd.train", [
      f"--model_dir={model_dir}", f"--data_dir={tf1_run.data_dir}",
      "--log_every_n_steps=20", f"--max_steps={SHARED_STEPS + 20}"],
                      wrapper=RANK_UMASK)
  assert_ok(second)
  resumed = read_results(model_dir)
  assert resumed["start_step"] == SHARED_STEPS
  assert resumed["steps"] == SHARED_STEPS + 20
  assert resumed["weight_digests"][0] == resumed["weight_digests"][1]
  assert resumed["weight_digests"][0] != digests[0]
  assert f"Resuming from global step {SHARED_STEPS}" in (second.stderr
                                                         + second.stdout)
  assert written_by_other_ranks(model_dir) == []
