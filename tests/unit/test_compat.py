"""legacy_hvd.common.compat and data.tar_extraction: each stand-in for a newer
API does what that API does.

On TF 2 the TF 1.15 fallbacks are checked bit for bit against TF's own ops;
on TF 1.15 (which lacks those ops) tests/jobs/test_cross_stack.py checks that
the whole input pipeline gives the same batches as on TF 2. The Keras the fit
variant gets, in a fresh process: tests/jobs/test_compat.py.
"""
import io
import os
import tarfile

import numpy as np
import pytest
import tensorflow.compat.v2 as tf

from legacy_hvd.common import compat
from legacy_hvd.data import tar_extraction

SEEDS = [[5000 + i, 17 * i] for i in range(64)]


def image():
  return tf.reshape(tf.range(40 * 40 * 3, dtype=tf.int32) % 251, [40, 40, 3])


def test_crop_and_flip_fallbacks_match_tf2s_stateless_ops():
  if compat.TF1:
    pytest.skip("TF 1.15 has no stateless image ops to compare with; "
                "tests/jobs/test_cross_stack.py compares its batches with "
                "TF 2's")
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


@pytest.mark.parametrize("extract", [tar_extraction.extract_tar,
                                     tar_extraction.extract_checked])
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
