"""legacy_hvd.evaluate restores a checkpoint and agrees with the trainer."""
import json
import os

import pytest

from tests.helpers import (assert_ok, error_lines, horovodrun, read_results,
                           run_module)
from tests.helpers import checkpoint_damage
from tests.helpers.shared_runs import SHARED_STEPS, copy_run


def test_evaluate_matches_training_results(tf1_run, tf1_evaluation):
  trained = read_results(tf1_run.model_dir)
  metrics, printed = tf1_evaluation
  # Same checkpoint, same test set: the very same counts, and the same mean
  # loss up to float32 rounding (each batch's loss is a float32 sum, whose
  # order depends on the process's thread pools).
  assert metrics["test_accuracy"] == trained["test_accuracy"]
  assert metrics["per_class_accuracy"] == trained["per_class_accuracy"]
  assert metrics["test_loss"] == pytest.approx(trained["test_loss"], rel=1e-6)
  assert metrics["checkpoint"].endswith(f"model.ckpt-{SHARED_STEPS}")
  for name in ("airplane", "truck", "all"):
    assert name in printed


def test_evaluate_without_checkpoint_is_one_line(tmp_path):
  process = horovodrun(2, "legacy_hvd.evaluate", [f"--model_dir={tmp_path}"],
                       timeout=60)
  assert process.returncode != 0
  errors = error_lines(process)
  assert len(errors) == 1 and "holds no checkpoint" in errors[0]


def test_evaluate_and_export_read_a_moved_damaged_directory(tf1_run,
                                                            tmp_path):
  # Copied from elsewhere (its state file naming the checkpoints there),
  # the newest data file cut short: evaluate reads the one before, saying
  # both once; with no intact checkpoint left, export stops in one line.
  # Every kind of damage: tests/jobs/test_faults.py's matrix.
  model_dir = copy_run(tf1_run, tmp_path / "moved")
  checkpoint_damage.names_elsewhere(model_dir, tmp_path / "elsewhere")
  newest = str(model_dir / f"model.ckpt-{SHARED_STEPS}")
  data_file = checkpoint_damage.data_file(newest)
  os.truncate(data_file, os.path.getsize(data_file) // 2)
  files = checkpoint_damage.digests(model_dir)
  out = tmp_path / "evaluate.json"
  process = horovodrun(2, "legacy_hvd.evaluate", [
      f"--model_dir={model_dir}", f"--data_dir={tf1_run.data_dir}",
      f"--results_file={out}"])
  assert_ok(process)
  output = process.stdout + process.stderr
  warnings = [line for line in output.splitlines() if "resume.py" in line]
  assert len(warnings) == 2 and all(w.startswith("[0]") for w in warnings)
  assert "state file names checkpoints in" in warnings[0]
  assert "reading its own files here" in warnings[0]
  assert (f"model.ckpt-{SHARED_STEPS} in {model_dir} is damaged ("
          in warnings[1])
  half = SHARED_STEPS // 2
  assert f"reading model.ckpt-{half} instead" in warnings[1]
  assert json.loads(out.read_text())["checkpoint"] == str(
      model_dir / f"model.ckpt-{half}")
  assert checkpoint_damage.digests(model_dir) == files   # read only

  for index in model_dir.glob("*.index"):
    os.truncate(index, 0)
  process = run_module("legacy_hvd.export", [f"--model_dir={model_dir}",
                                             f"--out={tmp_path / 'saved'}"])
  assert process.returncode != 0
  errors = error_lines(process)
  assert len(errors) == 1, process.stderr
  assert (f"--model_dir={model_dir}: no intact checkpoint is left "
          f"(model.ckpt-{SHARED_STEPS}: ") in errors[0]
  assert "Traceback" not in process.stderr
  assert not (tmp_path / "saved").exists()
