"""A bad flag at the command line: one line and no training, from one
process and from every rank of a horovodrun job (the validators
themselves: tests/unit/test_flags.py)."""
import pytest

from tests.helpers import error_lines, horovodrun, own_lines, run_module


def test_cli_reports_bad_flag_in_one_line_without_training(tmp_path):
  process = run_module("legacy_hvd.train",
                       ["--batch_size=0", f"--model_dir={tmp_path / 'm'}"],
                       timeout=60)
  assert process.returncode == 2
  lines = own_lines(process.stderr)
  assert len(lines) == 1 and "--batch_size" in lines[0], process.stderr
  assert not (tmp_path / "m").exists()


# One stack: the flag's validator and the ranks' one-line exit are the
# project's own code (flags/, cli), run before hvd.init() and before any
# TensorFlow op; the TF 1.15 suite parses the same values in this process
# (tests/unit/test_flags.py).
@pytest.mark.one_stack
def test_horovodrun_job_with_bad_flag_exits_with_one_line(tmp_path):
  # Every rank parses its flags before hvd.init(); the other bad values
  # take the same path (test_bad_values_are_rejected_naming_the_flag).
  arg = "--lr_scaling=cubic"
  process = horovodrun(2, "legacy_hvd.train", [arg, f"--model_dir={tmp_path}/m"],
                       timeout=90)
  assert process.returncode != 0
  errors = error_lines(process)
  assert len(errors) == 1 and arg.split("=")[0] in errors[0], (
      process.stdout + process.stderr)
  # horovodrun's own launcher prints a traceback when a rank fails; the
  # ranks themselves must not.
  assert "]<stderr>:Traceback" not in process.stdout + process.stderr
  assert not (tmp_path / "m").exists()
