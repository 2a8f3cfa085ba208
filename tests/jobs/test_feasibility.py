"""Valid flags that are impossible together, with the data or at this world
size end before any rank trains: one line with the numbers, nothing written
(the rules themselves: tests/unit/test_feasibility.py)."""
import os

import pytest

from tests.helpers import error_lines, horovodrun, run_module


# One stack: config_checks.problem is plain Python over the flags, the data's
# size and the number of ranks, run before hvd.init() (startup.
# before_horovod); the TF 1.15 suite checks its numbers in this process
# (tests/unit/test_feasibility.py).
@pytest.mark.one_stack
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
  if "-np" not in process.args:   # one plain process: no launcher's lines
    assert "Traceback" not in output
