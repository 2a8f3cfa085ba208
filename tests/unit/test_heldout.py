"""legacy_hvd.training.periodic_eval: at which steps the held-out evaluation runs, and where
rank 0 puts its numbers (log line, TensorBoard's `eval` run, the step log,
results.json's history); the other ranks only keep the history."""
import json
import logging

import pytest
import tensorflow.compat.v1 as tf

from legacy_hvd.common import progress
from legacy_hvd.training import periodic_eval
from tests.helpers import eval_summaries

# The metrics of one evaluation, as scoring.metrics_from_counts gives them.
FIRST = {"test_loss": 2.25, "test_accuracy": 0.125, "test_examples": 10000}
FINAL = {"test_loss": 1.5, "test_accuracy": 0.5, "test_examples": 10000}


def test_due_every_n_steps_but_never_at_the_last():
  # The last step's evaluation is the final one, which the trainer runs.
  held_out = periodic_eval.HeldOut(20, 100, 1, "unused")
  assert [step for step in range(1, 121) if held_out.due(step)] == [
      20, 40, 60, 80]


def test_never_due_without_eval_every_n_steps():
  held_out = periodic_eval.HeldOut(0, 100, 0, "unused")
  assert not any(held_out.due(step) for step in range(0, 201))


def test_rank0_logs_writes_the_eval_run_and_the_step_log(tmp_path, caplog):
  caplog.set_level(logging.INFO)
  step_log = progress.StepLog(str(tmp_path / "steps.jsonl"))
  held_out = periodic_eval.HeldOut(20, 40, 0, str(tmp_path), step_log)
  held_out.record(20, FIRST)
  held_out.record_final(40, FINAL)
  step_log.close()
  history = [{"step": 20, "loss": 2.25, "accuracy": 0.125, "examples": 10000},
             {"step": 40, "loss": 1.5, "accuracy": 0.5, "examples": 10000}]
  assert held_out.results() == {"evaluations": history}
  assert [r.getMessage() for r in caplog.records] == [
      "step 20: test accuracy 0.1250, test loss 2.25 (10000 images)",
      "step 40: test accuracy 0.5000, test loss 1.5 (10000 images)"]
  assert eval_summaries(str(tmp_path)) == {
      ("loss", 20): 2.25, ("accuracy", 20): 0.125,
      ("loss", 40): 1.5, ("accuracy", 40): 0.5}
  logged = [json.loads(line) for line in
            (tmp_path / "steps.jsonl").read_text().splitlines()]
  assert [(r["step"], r["test_loss"], r["test_accuracy"], r["test_examples"])
          for r in logged] == [(20, 2.25, 0.125, 10000),
                               (40, 1.5, 0.5, 10000)]


def test_the_graph_jobs_eval_run_is_written_outside_eager_mode(tmp_path):
  # In a TF1 graph, which the job has finalized, no summary op is added.
  with tf.Graph().as_default() as graph:
    graph.finalize()
    held_out = periodic_eval.HeldOut(20, 40, 0, str(tmp_path))
    held_out.record(20, FIRST)
  assert eval_summaries(str(tmp_path)) == {("loss", 20): 2.25,
                                           ("accuracy", 20): 0.125}


@pytest.mark.parametrize("rank, write_summaries", [(1, True), (0, False)])
def test_only_the_history_elsewhere(tmp_path, caplog, rank, write_summaries):
  # Other ranks, and rank 0 of the Estimator job (which writes its own eval
  # run) write no summaries.
  caplog.set_level(logging.INFO)
  held_out = periodic_eval.HeldOut(20, 40, rank, str(tmp_path),
                                   write_summaries=write_summaries)
  held_out.record(20, FIRST)
  assert held_out.results() == {"evaluations": [
      {"step": 20, "loss": 2.25, "accuracy": 0.125, "examples": 10000}]}
  assert not (tmp_path / periodic_eval.EVAL_RUN).exists()
  assert len(caplog.records) == (1 if rank == 0 else 0)


def test_a_final_evaluation_alone_is_no_history(tmp_path):
  held_out = periodic_eval.HeldOut(0, 40, 0, str(tmp_path))
  held_out.record_final(40, FINAL)
  assert held_out.results() == {"evaluations": []}
  assert not (tmp_path / periodic_eval.EVAL_RUN).exists()
