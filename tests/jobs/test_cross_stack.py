"""The way between TF 1.15 and TF 2: checkpoints, exports and the job itself.

Runs in `make test TF_VERSION=1.15.5`, which installs the default stack too
and names its Python in LEGACY_HVD_TF2_PYTHON; this process is the TF 1.15
stack. Each test goes both ways: what one stack wrote, the other reads.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from legacy_hvd.common import compat
from legacy_hvd.data import cifar10
from legacy_hvd.data import embedded
from tests.helpers import REPO, assert_ok, horovodrun, read_results

TF2_PYTHON = os.environ.get("LEGACY_HVD_TF2_PYTHON")
if not (TF2_PYTHON and compat.TF1):
  pytestmark = pytest.mark.skip(
      reason="cross-stack tests need two stacks: `make test TF_VERSION=1.15.5` "
      "runs them from TF 1.15 with the default stack beside "
      "(LEGACY_HVD_TF2_PYTHON)")
STACKS = {"tf1.15": sys.executable, "tf2": TF2_PYTHON}
DIRECTIONS = [("tf1.15", "tf2"), ("tf2", "tf1.15")]
FIRST_STEPS, TOTAL_STEPS = 20, 40
# Per-step loss after a resume on the other stack vs the run that never
# stopped. The stacks' kernels round differently in the last bits, which
# Adam amplifies (docs/stacks.md, "How close the stacks are", has the
# figures); a resume that lost the optimizer's slots or the data position
# sees another update or batch, whose loss differs a hundred times more.
LOSS_TOLERANCE = 1e-3
TIMEOUT = 300


def run(stack, argv, **kwargs):
  python = STACKS[stack]
  return subprocess.run([python, *argv], cwd=REPO, capture_output=True,
                        text=True, timeout=TIMEOUT, **kwargs)


def train(stack, model_dir, max_steps, step_log, data_dir):
  """horovodrun -np 2 of the TF1 job, by the stack's own horovodrun."""
  process = horovodrun(2, "legacy_hvd.train", [
      f"--model_dir={model_dir}", f"--max_steps={max_steps}",
      f"--step_log={step_log}", f"--data_dir={data_dir}",
      "--log_every_n_steps=10", f"--save_checkpoints_steps={FIRST_STEPS}"],
                       timeout=TIMEOUT, python=STACKS[stack])
  assert_ok(process)
  return read_results(model_dir)


def losses(step_log):
  with open(step_log) as f:
    return {r["step"]: r["loss"] for r in map(json.loads, f)}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
  return embedded.ensure_generated(str(tmp_path_factory.mktemp("data")))


@pytest.fixture(scope="module", params=DIRECTIONS, ids=lambda d: "-to-".join(d))
def moved(request, tmp_path_factory, data_dir):
  """A 20-step run of one stack, resumed to 40 by the other; and the 40-step
  run of the first stack that never stopped."""
  old, new = request.param
  root = tmp_path_factory.mktemp(f"{old}-to-{new}")
  straight = train(old, root / "straight", TOTAL_STEPS, root / "straight.jsonl",
                   data_dir)
  first = train(old, root / "moved", FIRST_STEPS, root / "moved.jsonl",
                data_dir)
  shutil.copytree(root / "moved", root / "export-source")
  resumed = train(new, root / "moved", TOTAL_STEPS, root / "moved.jsonl",
                  data_dir)
  return dict(old=old, new=new, root=root, straight=straight, first=first,
              resumed=resumed)


def test_stacks_are_the_ones_named():
  versions = {stack: run(stack, ["-c", "import tensorflow as tf; "
                                 "print(tf.version.VERSION)"]).stdout.split()[-1]
              for stack in STACKS}
  assert compat.TF1 and versions["tf1.15"] == "1.15.5"
  assert versions["tf2"].startswith("2.")


def test_same_weights_batches_and_augmentation_on_both_stacks(tmp_path,
                                                             data_dir):
  prints = {}
  for stack in STACKS:
    out = tmp_path / f"{stack}.npz"
    assert_ok(run(stack, ["tests/helpers/workers/fingerprint.py", data_dir,
                          str(out)]))
    prints[stack] = np.load(out)
  old, new = prints["tf1.15"], prints["tf2"]
  assert sorted(old.files) == sorted(new.files)
  for name in old.files:
    if name != "first_loss":   # the one value kernels compute: see below
      np.testing.assert_array_equal(old[name], new[name], err_msg=name)
  # A stream resumed 21 examples in (2 batches of 8, and 5) continues the
  # first one exactly: same examples, same crops and flips.
  for kind in ("images", "labels"):
    np.testing.assert_array_equal(old[f"{kind}-21-0"][:3],
                                  old[f"{kind}-0-2"][5:])
  # Same inputs, same weights: the first loss agrees to float32 rounding.
  assert old["first_loss"] == pytest.approx(float(new["first_loss"]), rel=1e-6)


def test_checkpoint_resumes_on_the_other_stack(moved):
  first, resumed = moved["first"], moved["resumed"]
  assert first["tensorflow_version"] != resumed["tensorflow_version"]
  assert first["steps"] == FIRST_STEPS
  assert resumed["start_step"] == FIRST_STEPS
  assert resumed["steps"] == TOTAL_STEPS and resumed["weights_in_sync"]
  straight = losses(moved["root"] / "straight.jsonl")
  moved_losses = losses(moved["root"] / "moved.jsonl")
  assert sorted(moved_losses) == list(range(1, TOTAL_STEPS + 1))
  # Before the move: the same stack, the same steps, bit for bit.
  assert all(moved_losses[s] == straight[s] for s in range(1, FIRST_STEPS + 1))
  gaps = [abs(moved_losses[s] - straight[s])
          for s in range(FIRST_STEPS + 1, TOTAL_STEPS + 1)]
  assert max(gaps) <= LOSS_TOLERANCE, gaps


@pytest.mark.parametrize("export_format", ["saved_model", "frozen_graph"])
def test_export_serves_the_same_classes_on_the_other_stack(moved, data_dir,
                                                          export_format):
  old, new, root = moved["old"], moved["new"], moved["root"]
  export = root / f"export.{export_format}"
  assert_ok(run(old, ["-m", "legacy_hvd.export",
                      f"--model_dir={root / 'export-source'}",
                      f"--out={export}", f"--format={export_format}"]))
  classes = {}
  for stack in (old, new):
    out = root / f"classes-{export_format}-{stack}.npy"
    assert_ok(run(stack, ["tests/helpers/workers/classify.py", str(export),
                          data_dir, str(out)]))
    classes[stack] = np.load(out)
  assert len(classes[old]) == len(classes[new]) == embedded.TEST_IMAGES
  np.testing.assert_array_equal(classes[old], classes[new])
  # They are the trained model's: the accuracy its own run measured.
  labels = cifar10.load(data_dir).test_labels
  assert np.mean(classes[old] == labels) == moved["first"]["test_accuracy"]


def test_compare_paths_measures_the_stacks_step_by_step(tmp_path):
  out = tmp_path / "compare"
  process = subprocess.run(
      [sys.executable, "tools/compare_paths.py", "--np", "2", "--steps", "20",
       "--out", str(out), "--impls", "none", "--stacks", TF2_PYTHON],
      cwd=REPO, capture_output=True, text=True, timeout=2 * TIMEOUT)
  assert_ok(process)
  report = json.loads((out / "report.json").read_text())
  reference, other = report["runs"]
  assert reference["tensorflow_version"] == "1.15.5"
  assert other["tensorflow_version"].startswith("2.")
  (comparison,) = report["comparisons"]
  assert comparison["steps_compared"] == 20
  # The first steps are bitwise equal (same data, weights, graph); kernel
  # rounding then leaves them within the tool's tolerance.
  assert comparison["identical_loss_steps"] >= 1
  assert comparison["within_tolerance"]
  assert "kernel" in comparison["cause"]
  assert f"| TensorFlow | 1.15.5 | {other['tensorflow_version']} |" in (
      out / "report.md").read_text()
  assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_benchmark_times_both_stacks_in_one_invocation(tmp_path):
  out = tmp_path / "bench"
  process = subprocess.run(
      [sys.executable, "tools/benchmark.py", "--out", str(out), "--steps",
       "10", "--warmup", "5", "--repeats", "1", "--cases", "tf1-np1",
       "--stacks", TF2_PYTHON], cwd=REPO, capture_output=True, text=True,
      timeout=2 * TIMEOUT)
  assert_ok(process)
  report = json.loads((out / "benchmark.json").read_text())
  versions = report["tensorflow_versions"]
  (other,) = [label for label in versions if label != "tf1-np1"]
  assert versions["tf1-np1"] == "1.15.5" and other == f"tf1-np1@tf{versions[other]}"
  medians = report["median_images_per_sec"]
  assert medians["tf1-np1"] > 0 and medians[other] > 0
  ratio = report["ratios"][f"tf1-np1: TF {versions[other]} / TF 1.15.5"]
  assert ratio["value"] == medians[other] / medians["tf1-np1"]
