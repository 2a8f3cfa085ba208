"""tools/benchmark.py runs the real trainer and reports medians and ratios."""
import json
import subprocess
import sys

import pytest

from tests.helpers import REPO, assert_ok


# The tool's report; on the TF 1.15 stack test_cross_stack runs the tool.
@pytest.mark.one_stack
def test_benchmark_reports_cases_and_ratios(tmp_path, isolated_cache):
  out = tmp_path / "bench"
  process = subprocess.run(
      [sys.executable, "tools/benchmark.py", "--out", str(out), "--steps", "10",
       "--warmup", "5", "--repeats", "2",
       "--cases", "bare,tf1-np1,tf1-np1-plain"], cwd=REPO,
      capture_output=True, text=True, timeout=600)
  assert_ok(process)
  report = json.loads((out / "benchmark.json").read_text())
  medians = report["median_images_per_sec"]
  for case in ("bare", "tf1-np1", "tf1-np1-plain"):
    rates = report["images_per_sec"][case]
    assert len(rates) == 2 and all(r > 0 for r in rates)
    # Every case as a fraction of the bare loop, with its repeats' spread.
    assert report["fraction_of_bare"][case] == medians[case] / medians["bare"]
    assert report["spread"][case] == (max(rates) - min(rates)) / medians[case]
    # One peak RSS per rank: at least the 150 MB of training pixels.
    (peak,) = report["peak_rss_bytes_per_rank"][case]
    assert 150e6 < peak < 8e9
  assert report["ratios"]["tf1 np1 / bare loop"]["target"] == 0.95
  label = "horovod np1 / plain TF"
  ratio = report["ratios"][label]
  assert ratio["value"] == medians["tf1-np1"] / medians["tf1-np1-plain"]
  assert ratio["target"] == 0.97
  assert f"| {label} |" in (out / "benchmark.md").read_text()
  # Ratios whose cases did not run are left out, not guessed.
  assert "real / synthetic data at np1" not in report["ratios"]
  assert "np2 / np1 (aggregate)" not in report["ratios"]


def test_benchmark_rejects_unknown_cases_in_one_line(tmp_path):
  process = subprocess.run(
      [sys.executable, "tools/benchmark.py", "--out", str(tmp_path / "b"),
       "--cases", "default,tf9-np3"], cwd=REPO, capture_output=True,
      text=True, timeout=60)
  assert process.returncode == 2
  assert "tf9-np3" in process.stderr.strip().splitlines()[-1]
  assert not (tmp_path / "b").exists()


def test_synthetic_training_runs_and_evaluates(tmp_path, isolated_cache):
  # One rank: what --synthetic changes is the input, the same on every rank.
  from tests.helpers import horovodrun, read_results
  assert_ok(horovodrun(1, "legacy_hvd.train",
                       [f"--model_dir={tmp_path}", "--synthetic",
                        "--max_steps=20"]))
  results = read_results(tmp_path)
  assert results["steps"] == 20 and results["flags"]["synthetic"] is True


def test_benchmark_ratios_and_groups_name_its_cases():
  # A ratio naming no case is left out of every report without a word.
  from tools import benchmark
  named = {case for top, bottom, _ in benchmark.RATIOS.values()
           for case in (top, bottom)}
  named |= {case for group in benchmark.CASE_GROUPS.values()
            for case in group}
  assert named <= set(benchmark.CASES), named - set(benchmark.CASES)
  assert {"floor-mwms-np2", "floor-tf2-np2"} <= set(
      benchmark.CASE_GROUPS["mwms"])
  # Issue 44's figures: each path past Horovod and Horovod's at np 1, 2, 4.
  assert {f"{path}-np{np}" for np in (1, 2, 4)
          for path in ("mwms", "mwms-fit", "floor-mwms", "keras", "tf1")
          } <= set(benchmark.CASE_GROUPS["past-horovod"])
