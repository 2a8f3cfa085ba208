"""Valid flags that are impossible together, with the data or at this world
size: feasibility names each in one line with the numbers, and checks file
flags without writing (the jobs that stop on them before any rank trains:
tests/jobs/test_feasibility.py)."""
import os

import pytest

from legacy_hvd.common.config import Config
from legacy_hvd.rank import config_checks


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
  problem = config_checks.problem(Config(**flags), 50000, world)
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
  assert config_checks.problem(Config(**flags), 50000, world) is None


def test_file_flags_are_checked_without_writing(tmp_path):
  (tmp_path / "a_file").write_text("")
  assert "is a directory" in config_checks.file_problem("step_log", str(tmp_path))
  assert "is a file" in config_checks.file_problem(
      "step_log", str(tmp_path / "a_file" / "steps.jsonl"))
  assert config_checks.file_problem(
      "step_log", str(tmp_path / "new" / "dir" / "steps.jsonl")) is None
  assert sorted(os.listdir(tmp_path)) == ["a_file"]
