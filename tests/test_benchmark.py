"""tools/benchmark.py runs the real trainer and reports medians and ratios."""
import json
import subprocess
import sys

from tests.helpers import REPO, assert_ok


def test_benchmark_reports_cases_and_ratios(tmp_path, isolated_cache):
  out = tmp_path / "bench"
  process = subprocess.run(
      [sys.executable, "tools/benchmark.py", "--out", str(out), "--steps", "20",
       "--warmup", "10", "--repeats", "2",
       "--cases", "tf1-np1,tf1-np1-synthetic"], cwd=REPO, capture_output=True,
      text=True, timeout=600)
  assert_ok(process)
  report = json.loads((out / "benchmark.json").read_text())
  for case in ("tf1-np1", "tf1-np1-synthetic"):
    rates = report["images_per_sec"][case]
    assert len(rates) == 2 and all(r > 0 for r in rates)
  ratio = report["ratios"]["real / synthetic data at np1"]
  medians = report["median_images_per_sec"]
  assert ratio["value"] == medians["tf1-np1"] / medians["tf1-np1-synthetic"]
  assert ratio["target"] == 0.97
  assert "| real / synthetic data at np1 |" in (out / "benchmark.md").read_text()


def test_synthetic_training_runs_and_evaluates(tmp_path, isolated_cache):
  from tests.helpers import horovodrun, read_results
  assert_ok(horovodrun(2, "legacy_hvd.train",
                       [f"--model_dir={tmp_path}", "--synthetic",
                        "--max_steps=20"]))
  results = read_results(tmp_path)
  assert results["steps"] == 20 and results["flags"]["synthetic"] is True
