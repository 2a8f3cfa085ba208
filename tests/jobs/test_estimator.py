"""The Estimator job (legacy_hvd.train_estimator) against its known traps,
with real horovodrun jobs: one job trained with periodic evaluation, then
re-run finished, then continued by the MonitoredTrainingSession job.

Its faults (SIGTERM, NaN, damaged checkpoint, bad model_dir) run with the
other trainers' in tests/jobs/test_faults.py."""
import glob
import json
import os
import re
import time

import pytest
import tensorflow.compat.v1 as tf

from legacy_hvd.common import compat
from tests.helpers import assert_ok, error_lines, horovodrun, read_results

pytestmark = pytest.mark.skipif(compat.estimator() is None,
                                reason="no tf.estimator (TF >= 2.16)")
STEPS, EVERY = 40, 20
PROMPT_EXIT_SECONDS = 30


@pytest.fixture(scope="module")
def job(tmp_path_factory):
  """np=2, 40 steps, evaluated every 20; its own TMPDIR, to see the other
  ranks' scratch directories go."""
  root = tmp_path_factory.mktemp("estimator")
  env = {"TMPDIR": str(root / "tmp"), "XDG_CACHE_HOME": str(root / "cache")}
  os.makedirs(env["TMPDIR"])
  args = [f"--model_dir={root / 'model'}", f"--max_steps={STEPS}",
          f"--eval_every_n_steps={EVERY}", "--log_every_n_steps=10",
          "--deterministic", f"--step_log={root / 'estimator.jsonl'}"]
  process = horovodrun(2, "legacy_hvd.train_estimator", args, env=env)
  assert_ok(process)
  return root, args, env, process


def test_trains_evaluates_every_n_steps_and_writes_results(job):
  root, _, env, process = job
  output = process.stdout + process.stderr
  evaluated = re.findall(r"\]<stderr>:.*step (\d+): test accuracy", output)
  assert evaluated == [str(EVERY), str(STEPS)]   # rank 0's lines only
  results = read_results(root / "model")
  assert results["path"] == "estimator" and results["steps"] == STEPS
  # The same history as the other trainers: results.json, the step log.
  assert [e["step"] for e in results["evaluations"]] == [EVERY, STEPS]
  assert results["evaluations"][-1]["accuracy"] == results["test_accuracy"]
  logged = [json.loads(line) for line in
            (root / "estimator.jsonl").read_text().splitlines()]
  assert [r["step"] for r in logged if "test_loss" in r] == [EVERY, STEPS]
  assert results["start_step"] == 0 and results["weights_in_sync"]
  assert results["test_examples"] > 0
  assert "]<stderr>:Traceback" not in output
  # Only rank 0 wrote anything that stays: the scratch directory Estimator
  # needs on the other ranks is gone.
  assert os.listdir(env["TMPDIR"]) == []


def losses(step_log):
  """Every training step's loss (an evaluation's line has test_loss)."""
  records = [json.loads(line) for line in step_log.read_text().splitlines()]
  return [r["loss"] for r in records if "test_loss" not in r]


def test_train_evaluate_rounds_equal_the_mts_job_bit_for_bit(job, tmp_path):
  # The second round restores rank 0's checkpoint, broadcasts it and skips
  # the input already read: no loss may change for it, nor for Estimator.
  root, _, env, _ = job
  step_log = tmp_path / "tf1.jsonl"
  assert_ok(horovodrun(2, "legacy_hvd.train", [
      f"--model_dir={tmp_path / 'tf1'}", f"--max_steps={STEPS}",
      "--deterministic", f"--step_log={step_log}"], env=env))
  assert len(losses(step_log)) == STEPS
  assert losses(root / "estimator.jsonl") == losses(step_log)


def test_rerun_of_a_finished_job_ends_at_once_on_every_rank(job):
  root, args, env, _ = job
  before = read_results(root / "model")
  started = time.monotonic()
  process = horovodrun(2, "legacy_hvd.train_estimator", args, env=env,
                       timeout=PROMPT_EXIT_SECONDS + 60)
  assert time.monotonic() - started < PROMPT_EXIT_SECONDS + 30
  assert_ok(process)
  output = process.stdout + process.stderr
  lines = re.findall(r"\]<stderr>:.*Nothing to train.*", output)
  assert len(lines) == 1 and f"at step {STEPS}" in lines[0], output[-3000:]
  assert not error_lines(process)
  assert read_results(root / "model") == before   # its results stand


def test_checkpoints_continue_on_the_mts_job_and_back(job):
  root, _, env, _ = job
  model_dir = root / "model"
  estimator_names = tf.train.load_checkpoint(
      str(model_dir)).get_variable_to_shape_map()
  process = horovodrun(2, "legacy_hvd.train",
                       [f"--model_dir={model_dir}", f"--max_steps={STEPS + 10}"],
                       env=env)
  assert_ok(process)
  results = read_results(model_dir)
  assert results["path"] == "tf1" and results["start_step"] == STEPS
  assert results["steps"] == STEPS + 10 and results["weights_in_sync"]
  # The same variables, names and shapes, in both jobs' checkpoints.
  assert tf.train.load_checkpoint(
      str(model_dir)).get_variable_to_shape_map() == estimator_names
  assert glob.glob(str(model_dir / "model.ckpt-50.index"))
  # And the Estimator job continues the MTS job's run.
  process = horovodrun(2, "legacy_hvd.train_estimator",
                       [f"--model_dir={model_dir}", f"--max_steps={STEPS + 20}"],
                       env=env)
  assert_ok(process)
  results = read_results(model_dir)
  assert results["path"] == "estimator" and results["start_step"] == STEPS + 10
  assert results["steps"] == STEPS + 20 and results["weights_in_sync"]
