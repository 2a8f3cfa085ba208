"""legacy_hvd.model.keras_compat: the Keras the fit variant
(legacy_hvd.train_keras) gets on this stack, in a fresh process, as make
install builds it (the other stand-ins, in this process:
tests/unit/test_compat.py)."""
import subprocess
import sys

import pytest

from legacy_hvd.model import keras_compat
from tests.helpers import REPO, error_lines, run_module


# What legacy_hvd.train_keras runs on, in a fresh process (it picks the Keras
# before TensorFlow is imported).
KERAS_PROBE = """
import legacy_hvd.train_keras
import horovod.tensorflow.keras as hvd_keras
from legacy_hvd.model import keras_compat
callback = keras_compat.with_tf_keras_backend(
    hvd_keras.callbacks.MetricAverageCallback())
print(keras_compat.keras_version(), hasattr(callback.backend, "constant"))
"""


def test_train_keras_gets_keras_2_and_a_backend_horovod_can_use():
  """On every stack `make install` builds, tf.keras is Keras 2 for the fit
  variant (on TF >= 2.16 tf_keras), and Horovod's MetricAverageCallback gets
  a backend with what it calls on every epoch end."""
  probe = subprocess.run([sys.executable, "-c", KERAS_PROBE], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
  assert probe.returncode == 0, probe.stderr[-3000:]
  version, usable = probe.stdout.split()[-2:]
  assert version.startswith("2.") and usable == "True", probe.stdout


def test_train_keras_refuses_keras_3_in_one_line(tmp_path):
  if keras_compat.keras_version().startswith("2."):
    pytest.skip(f"tf.keras is Keras {keras_compat.keras_version()} on this "
                "stack: no Keras 3 to refuse")
  model_dir = tmp_path / "model"
  process = run_module("legacy_hvd.train_keras", [f"--model_dir={model_dir}"],
                       env={"TF_USE_LEGACY_KERAS": "0"}, timeout=120)
  assert process.returncode != 0
  errors = error_lines(process)
  assert errors == [
      f"legacy_hvd.train_keras: error: Keras {keras_compat.keras_version()} "
      "behind tf.keras: Horovod 0.28.1's Keras integration needs Keras 2: pip "
      f"install --no-deps '{keras_compat.TF_KERAS_REQUIREMENT}' (this module "
      "then sets TF_USE_LEGACY_KERAS=1; leave it unset or 1), or use "
      "legacy_hvd.train_tf2"], process.stderr[-3000:]
  assert "Traceback" not in process.stderr and not model_dir.exists()
