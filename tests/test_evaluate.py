"""legacy_hvd.evaluate restores a checkpoint and agrees with the trainer."""
import json

import pytest

from tests.helpers import assert_ok, error_lines, horovodrun, read_results


def test_evaluate_matches_training_results(tmp_path, isolated_cache):
  model_dir = tmp_path / "model"
  assert_ok(horovodrun(2, "legacy_hvd.train",
                       [f"--model_dir={model_dir}", "--max_steps=40"]))
  trained = read_results(model_dir)
  out = tmp_path / "eval.json"
  process = horovodrun(2, "legacy_hvd.evaluate",
                       [f"--model_dir={model_dir}", f"--results_file={out}"])
  assert_ok(process)
  metrics = json.loads(out.read_text())
  # Same checkpoint, same test set: the very same counts, and the same mean
  # loss up to float32 rounding (each batch's loss is a float32 sum, whose
  # order depends on the process's thread pools).
  assert metrics["test_accuracy"] == trained["test_accuracy"]
  assert metrics["per_class_accuracy"] == trained["per_class_accuracy"]
  assert metrics["test_loss"] == pytest.approx(trained["test_loss"], rel=1e-6)
  assert metrics["checkpoint"].endswith("model.ckpt-40")
  for name in ("airplane", "truck", "all"):
    assert name in process.stdout


def test_evaluate_without_checkpoint_is_one_line(tmp_path):
  process = horovodrun(2, "legacy_hvd.evaluate", [f"--model_dir={tmp_path}"],
                       timeout=60)
  assert process.returncode != 0
  errors = error_lines(process)
  assert len(errors) == 1 and "holds no checkpoint" in errors[0]
