"""legacy_hvd.evaluate restores a checkpoint and agrees with the trainer."""
import pytest

from tests.helpers import error_lines, horovodrun, read_results
from tests.helpers.shared_runs import SHARED_STEPS


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
