"""The TF1 job's fault tests (tests/test_faults.py), run against both TF2
variants: the tf.function loop (legacy_hvd.train_tf2) and Keras fit
(legacy_hvd.train_keras). Real horovodrun jobs, real signals, real files."""
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.helpers import REPO, assert_ok, horovodrun, read_results, wait_for
from tests.test_faults import PROMPT_EXIT_SECONDS, checkpoint_step, error_lines

VARIANTS = ["legacy_hvd.train_tf2", "legacy_hvd.train_keras"]
WEIGHTS = "conv1_weights/.ATTRIBUTES/VARIABLE_VALUE"   # TF2 checkpoint key


def launch(module, np, model_dir, log, *args):
  argv = ["horovodrun", "-np", str(np), "-H", f"localhost:{np}",
          sys.executable, "-m", module, f"--model_dir={model_dir}",
          "--log_every_n_steps=10", *args]
  return subprocess.Popen(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)


@pytest.mark.parametrize("module", VARIANTS)
def test_sigterm_saves_a_checkpoint_at_the_current_step(tmp_path, module,
                                                        isolated_cache):
  model_dir = tmp_path / "model"
  log_path = tmp_path / "job.log"
  with open(log_path, "w") as log:
    job = launch(module, 2, model_dir, log, "--max_steps=5000",
                 "--save_checkpoints_steps=100000")
    wait_for(lambda: "step 60:" in log_path.read_text(), 180, "step 60")
    job.send_signal(signal.SIGTERM)
    job.wait(timeout=PROMPT_EXIT_SECONDS)
  output = log_path.read_text()
  assert job.returncode != 0
  stopped = re.search(r"Stopped by signal 15 at step (\d+)", output)
  assert stopped, output[-3000:]
  step = int(stopped.group(1))
  # Saved where the ranks stopped, far from any periodic checkpoint.
  assert step >= 60 and checkpoint_step(model_dir) == step
  assert not (model_dir / "results.json").exists()
  assert "]<stderr>:Traceback" not in output

  resumed = horovodrun(2, module, [f"--model_dir={model_dir}",
                                   f"--max_steps={step + 10}"])
  assert_ok(resumed)
  results = read_results(model_dir)
  assert results["start_step"] == step and results["weights_in_sync"]


@pytest.mark.parametrize("module", VARIANTS)
def test_nan_stops_naming_the_step_and_keeps_good_checkpoint(
    tmp_path, module, isolated_cache):
  model_dir = tmp_path / "model"
  process = horovodrun(2, module, [f"--model_dir={model_dir}",
                                   "--optimizer=sgd", "--lr=1e12",
                                   "--max_steps=200",
                                   "--save_checkpoints_steps=1"], timeout=150)
  assert process.returncode != 0
  errors = error_lines(process)
  assert len(errors) == 1, process.stdout + process.stderr
  diverged = re.search(r"training diverged at step (\d+): the averaged "
                       r"gradients hold NaN or Inf", errors[0])
  assert diverged, errors[0]
  step = int(diverged.group(1))
  # Every checkpoint up to the step before holds finite weights only.
  assert checkpoint_step(model_dir) == step - 1
  reader = tf.train.load_checkpoint(str(model_dir))
  assert np.all(np.isfinite(reader.get_tensor(WEIGHTS)))
  assert "]<stderr>:Traceback" not in process.stdout + process.stderr


@pytest.mark.parametrize("module", VARIANTS)
def test_damaged_latest_checkpoint_falls_back_and_resumes(
    tmp_path, module, isolated_cache):
  model_dir = tmp_path / "model"
  args = [f"--model_dir={model_dir}", "--save_checkpoints_steps=20",
          "--log_every_n_steps=10"]
  assert_ok(horovodrun(2, module, args + ["--max_steps=40"]))
  first = read_results(model_dir)
  assert first["steps"] == 40 and first["weights_in_sync"]
  assert first["test_examples"] == 2000
  data_file = model_dir / "ckpt-40.data-00000-of-00001"
  raw = bytearray(data_file.read_bytes())
  raw[len(raw) // 2:len(raw) // 2 + 64] = b"\xff" * 64
  data_file.write_bytes(bytes(raw))

  process = horovodrun(2, module, args + ["--max_steps=60"])
  assert_ok(process)
  assert "ckpt-40 is damaged" in process.stdout + process.stderr
  results = read_results(model_dir)
  assert results["start_step"] == 20 and results["steps"] == 60
  assert results["weights_in_sync"]
  assert results["path"] == {"legacy_hvd.train_tf2": "tf2",
                             "legacy_hvd.train_keras": "keras-fit"}[module]
  # TensorBoard logs on rank 0 (Keras's callback writes under train/).
  events = [name for _, _, names in os.walk(model_dir) for name in names
            if name.startswith("events.out.tfevents")]
  assert events


@pytest.mark.parametrize("module", VARIANTS)
@pytest.mark.parametrize("model_dir, expected", [
    ("{tmp}/file", "is a file; expected a directory"),
    ("/sys/legacy_hvd_test_model", "not writable"),
])
def test_unusable_model_dir_is_one_line(tmp_path, module, model_dir,
                                        expected):
  (tmp_path / "file").write_text("not a directory")
  model_dir = model_dir.format(tmp=tmp_path)
  process = horovodrun(2, module, [f"--model_dir={model_dir}"],
                       timeout=PROMPT_EXIT_SECONDS + 60)
  assert process.returncode != 0
  errors = error_lines(process)
  assert len(errors) == 1 and f"--model_dir={model_dir}" in errors[0]
  assert expected in errors[0]
  assert "]<stderr>:Traceback" not in process.stdout + process.stderr
  assert not os.path.exists(model_dir) or os.path.isfile(model_dir)
