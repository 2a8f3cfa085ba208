"""The first-node check, run for real: on this host without a GPU it stops
in one line; --device=cpu runs its whole pipeline at np=2 and passes."""
import os
import shutil
import subprocess
import sys

import pytest

from tests.helpers import REPO, assert_ok, error_lines

CHECK = "legacy_hvd.launch.gpu_check"
STEPS = 20   # enough for a throughput after the first step; the job starts in ~10 s
pytestmark = pytest.mark.one_stack   # the launcher side


def check(args, tmp_path, timeout=240):
  """`python -m legacy_hvd.launch.gpu_check args`, with a private cache
  (as the isolated_cache fixture, for a run shared by a module)."""
  (tmp_path / "tmp").mkdir()   # where the check's default --out goes
  env = {"XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
         "KERAS_HOME": str(tmp_path / "keras-home"),
         "TMPDIR": str(tmp_path / "tmp")}
  return subprocess.run([sys.executable, "-m", CHECK, *args], cwd=REPO,
                        env=dict(os.environ, **env), capture_output=True,
                        text=True, timeout=timeout)


@pytest.fixture(scope="module")
def cpu_check(tmp_path_factory):
  """One --device=cpu run every assertion below reads."""
  root = tmp_path_factory.mktemp("gpu-check")
  out = root / "out"
  return check(["--device=cpu", f"--steps={STEPS}", f"--out={out}"], root), out


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None,
                    reason="a GPU node: the no-GPU line is for hosts without")
def test_without_a_gpu_one_line_exit_1_nothing_written(tmp_path):
  process = check([], tmp_path)
  assert process.returncode == 1
  assert "Traceback" not in process.stderr
  (line,) = process.stderr.strip().splitlines()
  assert line.startswith(f"{CHECK}: error: no GPU on this host (TensorFlow ")
  assert line.endswith("or --device=cpu to check the check itself")
  assert error_lines(process) == [line] and process.stdout == ""
  assert list((tmp_path / "tmp").iterdir()) == []


def test_on_cpu_every_verdict_passes(cpu_check):
  process, out = cpu_check
  assert_ok(process)
  lines = process.stdout.splitlines()
  verdicts = [line.split(": ", 1)[1] for line in lines
              if line.startswith(f"{CHECK}: PASS ")
              or line.startswith(f"{CHECK}: FAIL ")]
  assert [v.split(":")[0] for v in verdicts] == [
      "PASS job", "PASS placement", "PASS allreduce", "PASS weights"]
  assert f"PASS job: {STEPS} of {STEPS} steps, exit 0" in verdicts
  assert ("PASS placement: rank 0 visible_device_list '0', rank 1 "
          "visible_device_list '1'") in verdicts
  assert any(v.startswith("PASS allreduce: GLOO_ALLREDUCE x ")
             for v in verdicts)
  assert lines[-1].startswith(f"{CHECK}: all 4 checks hold on 2 CPU ranks")
  assert lines[-1].endswith(f"the records: {out}")


def test_on_cpu_throughput_against_the_bare_loop(cpu_check):
  process, out = cpu_check
  (line,) = [l for l in process.stdout.splitlines() if "throughput:" in l]
  assert " images/sec on 2 ranks (" in line
  assert " images/sec at np=1 on the CPU: " in line
  assert (out / "bare_loop_steps.jsonl").read_text().count("\n") == STEPS
  assert (out / "timeline.json").is_file() and (out / "job.log").is_file()
  assert (out / "job" / "results.json").is_file()
