"""legacy_hvd.compat: each stand-in for a newer API does what that API does.

On TF 2 the TF 1.15 fallbacks are checked bit for bit against TF's own ops;
on TF 1.15 (which lacks those ops) tests/test_cross_stack.py checks that the
whole input pipeline gives the same batches as on TF 2.
"""
import io
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest
import tensorflow.compat.v2 as tf

from legacy_hvd import compat
from tests.helpers import REPO, error_lines, run_module

SEEDS = [[5000 + i, 17 * i] for i in range(64)]


def image():
  return tf.reshape(tf.range(40 * 40 * 3, dtype=tf.int32) % 251, [40, 40, 3])


def test_crop_and_flip_fallbacks_match_tf2s_stateless_ops():
  if compat.TF1:
    pytest.skip("TF 1.15 has no stateless image ops to compare with; "
                "tests/test_cross_stack.py compares its batches with TF 2's")
  crops, flips = set(), set()
  for seed in SEEDS:
    expected = tf.image.stateless_random_crop(image(), [32, 32, 3], seed=seed)
    actual = compat.crop_from_uniform_draws(image(), [32, 32, 3], seed=seed)
    np.testing.assert_array_equal(actual.numpy(), expected.numpy())
    crops.add(int(actual[0, 0, 0]))
    expected = tf.image.stateless_random_flip_left_right(image(), seed=seed)
    actual = compat.flip_from_uniform_draw(image(), seed=seed)
    np.testing.assert_array_equal(actual.numpy(), expected.numpy())
    flips.add(bool(np.array_equal(actual.numpy(), image().numpy())))
  assert len(crops) > 20 and flips == {True, False}   # the draws vary


def test_crop_and_flip_are_pure_functions_of_the_seed():
  for seed in SEEDS[:4]:
    first = compat.stateless_random_crop(image(), [32, 32, 3], seed=seed)
    again = compat.stateless_random_crop(image(), [32, 32, 3], seed=seed)
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    assert first.shape == (32, 32, 3)


def test_package_version_finds_the_installed_tensorflow():
  version = compat.package_version("tensorflow-cpu", "tensorflow")
  assert version == tf.version.VERSION
  assert compat.package_version("no-such-distribution-here") is None


def archive(*members):
  """An in-memory tar of (name, type, link target) members."""
  buffer = io.BytesIO()
  with tarfile.open(fileobj=buffer, mode="w") as tar:
    for name, kind, target in members:
      info = tarfile.TarInfo(name)
      info.type = kind
      info.linkname = target
      data = b"x" if kind == tarfile.REGTYPE else b""
      info.size = len(data)
      tar.addfile(info, io.BytesIO(data))
  buffer.seek(0)
  return tarfile.open(fileobj=buffer)


@pytest.mark.parametrize("extract", [compat.extract_tar,
                                     compat.extract_checked])
def test_extraction_refuses_what_lands_outside(tmp_path, extract):
  with archive(("layout/a.bin", tarfile.REGTYPE, "")) as tar:
    extract(tar, str(tmp_path / "ok"))
  assert (tmp_path / "ok" / "layout" / "a.bin").read_bytes() == b"x"
  for bad in (("../escape.bin", tarfile.REGTYPE, ""),
              ("layout/link", tarfile.SYMTYPE, "/etc/passwd"),
              ("layout/dev", tarfile.CHRTYPE, "")):
    with archive(bad) as tar, pytest.raises(tarfile.TarError):
      extract(tar, str(tmp_path / "bad"))
  assert not os.path.exists(tmp_path / "escape.bin")
  # An absolute name is refused (3.7) or made relative (the 'data' filter).
  name = f"{tmp_path}/absolute.bin"
  with archive((name, tarfile.REGTYPE, "")) as tar:
    try:
      extract(tar, str(tmp_path / "abs"))
    except tarfile.TarError:
      pass
  assert not os.path.exists(name)


# What legacy_hvd.train_keras runs on, in a fresh process (it picks the Keras
# before TensorFlow is imported).
KERAS_PROBE = """
import legacy_hvd.train_keras
import horovod.tensorflow.keras as hvd_keras
from legacy_hvd import compat
callback = compat.with_tf_keras_backend(
    hvd_keras.callbacks.MetricAverageCallback())
print(compat.keras_version(), hasattr(callback.backend, "constant"))
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
  if compat.keras_version().startswith("2."):
    pytest.skip(f"tf.keras is Keras {compat.keras_version()} on this "
                "stack: no Keras 3 to refuse")
  model_dir = tmp_path / "model"
  process = run_module("legacy_hvd.train_keras", [f"--model_dir={model_dir}"],
                       env={"TF_USE_LEGACY_KERAS": "0"}, timeout=120)
  assert process.returncode != 0
  errors = error_lines(process)
  assert errors == [
      f"legacy_hvd.train_keras: error: Keras {compat.keras_version()} behind "
      "tf.keras: Horovod 0.28.1's Keras integration needs Keras 2: pip "
      f"install --no-deps '{compat.TF_KERAS_REQUIREMENT}' (this module then "
      "sets TF_USE_LEGACY_KERAS=1; leave it unset or 1), or use "
      "legacy_hvd.train_tf2"], process.stderr[-3000:]
  assert "Traceback" not in process.stderr and not model_dir.exists()
