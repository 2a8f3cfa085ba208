"""Valid flags that are impossible together, with the data or at this world
size end before any rank trains: one line with the numbers, nothing written."""
import os

import pytest

from legacy_hvd import feasibility
from legacy_hvd.config import Config
from tests.helpers import error_lines, horovodrun, run_module


@pytest.mark.parametrize("flags, world, numbers", [
    # examples per step and rank vs the smallest shard
    (dict(batch_size=12501), 4, ["--batch_size=12501", "12500", "4 ranks"]),
    (dict(batch_size=6251, backward_passes_per_step=2), 4,
     ["12502", "12500"]),
    (dict(batch_size=64), 50001, ["50001 ranks", "holds only 0"]),
    # warm-up vs the length of training, however it is given
    (dict(warmup_epochs=1.0, max_steps=100), 4, ["195 steps", "--max_steps=100"]),
    (dict(warmup_epochs=2.0, max_steps=390), 4, ["390 steps", "--max_steps=390"]),
    (dict(warmup_epochs=0.9995, epochs=1), 1, ["781 steps", "--epochs=1"]),
])
def test_impossible_combinations_are_named_with_their_numbers(flags, world,
                                                              numbers):
  problem = feasibility.problem(Config(**flags), 50000, world)
  assert problem is not None and "\n" not in problem
  for number in numbers:
    assert number in problem, problem


@pytest.mark.parametrize("flags, world", [
    (dict(), 4),
    (dict(batch_size=12500), 4),                                # exactly fits
    (dict(batch_size=6250, backward_passes_per_step=2), 4),
    (dict(batch_size=100000, synthetic=True), 4),             # no data read
    (dict(warmup_epochs=1.0, max_steps=196), 4),
    (dict(warmup_epochs=0.5, max_steps=100), 4),
])
def test_possible_combinations_pass(flags, world):
  assert feasibility.problem(Config(**flags), 50000, world) is None


def test_file_flags_are_checked_without_writing(tmp_path):
  (tmp_path / "a_file").write_text("")
  assert "is a directory" in feasibility.file_problem("step_log", str(tmp_path))
  assert "is a file" in feasibility.file_problem(
      "step_log", str(tmp_path / "a_file" / "steps.jsonl"))
  assert feasibility.file_problem(
      "step_log", str(tmp_path / "new" / "dir" / "steps.jsonl")) is None
  assert sorted(os.listdir(tmp_path)) == ["a_file"]


@pytest.mark.parametrize("module", ["legacy_hvd.train", "legacy_hvd.train_tf2"])
def test_shard_smaller_than_a_step_stops_every_rank_in_one_line(
    tmp_path, real_cifar10, module):
  # 2 ranks: 25,000 images each; 25,001 per step cannot fill one batch.
  process = horovodrun(2, module, [f"--model_dir={tmp_path / 'm'}",
                                   f"--data_dir={real_cifar10}",
                                   "--batch_size=25001",
                                   f"--step_log={tmp_path / 'steps'}"],
                       timeout=120)
  _assert_one_line(process, ["--batch_size=25001", "25000", "2 ranks"])
  assert not os.listdir(tmp_path)


def test_warmup_past_max_steps_and_step_log_under_a_file(tmp_path,
                                                         real_cifar10):
  process = run_module("legacy_hvd.train", [
      "--nohorovod", f"--model_dir={tmp_path / 'm'}",
      f"--data_dir={real_cifar10}", "--warmup_epochs=0.5", "--max_steps=300"],
                       timeout=120)
  _assert_one_line(process, ["390 steps", "--max_steps=300"])
  (tmp_path / "f").write_text("")
  process = run_module("legacy_hvd.train", [
      "--nohorovod", f"--model_dir={tmp_path / 'm'}",
      f"--step_log={tmp_path / 'f' / 'steps'}"], timeout=120)
  _assert_one_line(process, ["--step_log=", "is a file"])
  assert sorted(os.listdir(tmp_path)) == ["f"]


def _assert_one_line(process, words):
  output = process.stdout + process.stderr
  assert process.returncode != 0, output
  errors = error_lines(output)
  assert len(errors) == 1, output
  for word in words:
    assert word in errors[0], errors[0]
  # horovodrun's own launcher prints a traceback when a rank fails; the
  # ranks themselves must not.
  assert "]<stderr>:Traceback" not in output
  if process.args[0] != "horovodrun":
    assert "Traceback" not in output
