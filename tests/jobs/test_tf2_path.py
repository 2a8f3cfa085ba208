"""The TF2 path: parity with the TF1 path, the compare tool, and resuming."""
import json
import subprocess
import sys

import pytest

from tests.helpers import (REPO, assert_ok, assert_periodic_evaluations,
                           error_lines, horovodrun, read_results)
from tests.helpers.shared_runs import (SHARED_EVAL_EVERY, SHARED_STEPS,
                                      copy_run)

STEPS = 30


# On the TF 1.15 stack the tool runs in test_cross_stack.py, and the TF2
# loop's parity with the TF1 job in test_migration.py (the TF1 job's
# checkpoint continued by the TF2 loop, bit for bit).
@pytest.mark.one_stack
def test_compare_paths_v1_is_exact_and_keras_diverges(tmp_path, isolated_cache):
  out = tmp_path / "compare"
  process = subprocess.run(
      [sys.executable, "tools/compare_paths.py", "--np", "2", "--steps",
       str(STEPS), "--digest_every", "10", "--out", str(out),
       "--impls", "v1,keras", "--eval_every_n_steps", "10"], cwd=REPO, capture_output=True, text=True,
      timeout=600)
  assert_ok(process)
  report = json.loads((out / "report.json").read_text())
  v1, keras = report["comparisons"]
  assert v1["name"] == "tf2-v1" and v1["steps_compared"] == STEPS
  assert v1["max_abs_loss_diff"] <= 1e-4 and v1["within_tolerance"]
  assert v1["max_abs_final_weight_diff"] <= 1e-4
  assert v1["digest_steps"] == [10, 20, 30]
  assert v1["max_abs_weight_digest_diff"] <= 1e-4
  assert keras["within_tolerance"] is False
  assert keras["first_step_beyond_tolerance"] is not None
  assert "epsilon is 1e-7" in keras["cause"]
  for run in report["runs"]:
    assert run["steps"] == STEPS and run["weights_in_sync"]
  markdown = (out / "report.md").read_text()
  assert "| test accuracy |" in markdown and "Cause:" in markdown
  assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  # The held-out curves: the same weights give the same held-out numbers
  # (tf2-v1's are tf1's), other weights other ones (Keras Adam).
  held_out = report["held_out"]
  assert held_out["steps"] == [10, 20, STEPS]
  assert held_out["equal_to_tf1"] == {"tf2-v1": True, "tf2-keras": False}
  assert held_out["paths"]["tf1"]["accuracy"][-1] == report["runs"][0][
      "test_accuracy"]
  assert "## Held-out accuracy" in markdown
  assert (out / "held_out.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tf2_path_evaluates_periodically_on_every_rank(tf2_run):
  assert_periodic_evaluations(tf2_run.model_dir, tf2_run.files / "steps.jsonl",
                              tf2_run.output, SHARED_EVAL_EVERY, SHARED_STEPS)


def test_tf2_path_resumes_from_its_checkpoint(tf2_run, tmp_path):
  first = read_results(tf2_run.model_dir)
  assert first["path"] == "tf2" and first["steps"] == SHARED_STEPS
  assert first["weights_in_sync"] and first["test_examples"] == 2000
  model_dir = copy_run(tf2_run, tmp_path / "tf2")
  second = horovodrun(2, "legacy_hvd.train_tf2", [
      f"--model_dir={model_dir}", f"--data_dir={tf2_run.data_dir}",
      "--log_every_n_steps=10", f"--max_steps={SHARED_STEPS + 10}"])
  assert_ok(second)
  resumed = read_results(model_dir)
  assert resumed["start_step"] == SHARED_STEPS
  assert resumed["steps"] == SHARED_STEPS + 10
  assert resumed["weights_in_sync"]


def test_tf2_rejects_gradient_accumulation_in_one_line(tmp_path):
  process = horovodrun(2, "legacy_hvd.train_tf2",
                       ["--backward_passes_per_step=2",
                        f"--model_dir={tmp_path}/m"], timeout=90)
  assert process.returncode != 0
  errors = error_lines(process)
  assert len(errors) == 1 and "--backward_passes_per_step" in errors[0]
