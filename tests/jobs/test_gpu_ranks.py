"""A rank without its GPU stops in one line (legacy_hvd/rank/devices.py,
local_gpu): here --require_gpu on hosts where TensorFlow sees no GPU, on
the graph path, the eager path and MWMS. The other case, a host with fewer
GPUs than ranks, needs GPUs: the first-node check's node (docs/gpu.md)."""
import pytest

from legacy_hvd.common import compat
from tests.helpers import error_lines, horovodrun, run_module


@pytest.mark.parametrize("module", [
    "legacy_hvd.train",
    pytest.param("legacy_hvd.train_tf2", marks=pytest.mark.one_stack),
    pytest.param("legacy_hvd.train_mwms", marks=[
        pytest.mark.one_stack,
        pytest.mark.skipif(compat.TF1, reason="MWMS is TF 2's")]),
])
def test_require_gpu_without_a_gpu_is_one_line(tmp_path, module):
  args = ["--require_gpu", "--max_steps=5", f"--model_dir={tmp_path / 'm'}"]
  if module == "legacy_hvd.train_mwms":   # one worker, as python starts it
    process = run_module(module, args, timeout=90)
  else:
    process = horovodrun(2, module, args, timeout=90)
  output = process.stdout + process.stderr
  assert process.returncode != 0
  (line,) = error_lines(process)
  assert "error: --require_gpu: TensorFlow " in line, output
  assert "sees no GPU (built with CUDA: " in line
  assert line.endswith("or no --require_gpu to train on the CPU")
  # horovodrun prints a traceback of its own when a rank fails; no rank may.
  assert "]<stderr>:Traceback" not in output
  if module == "legacy_hvd.train_mwms":
    assert "Traceback" not in output
  assert not (tmp_path / "m").exists()
