"""Real CIFAR-10 in all five layouts decodes to the same tensors."""
import hashlib
import os

import numpy as np
import pytest

from legacy_hvd.data import cifar10
from tests.helpers import cifar10_layouts


def digest(data):
  h = hashlib.sha256()
  for array in (data.train_images, data.train_labels, data.test_images,
                data.test_labels):
    h.update(np.ascontiguousarray(array).tobytes())
  return h.hexdigest()


@pytest.fixture(scope="module")
def reference(real_cifar10):
  return cifar10.load(real_cifar10)


def test_real_binary_layout_is_complete(reference):
  assert reference.train_images.shape == (50000, 32, 32, 3)
  assert reference.test_images.shape == (10000, 32, 32, 3)
  assert np.bincount(reference.train_labels).tolist() == [5000] * 10
  assert np.bincount(reference.test_labels).tolist() == [1000] * 10


# The reader is numpy and the standard library: on the TF 1.15 stack
# (Python 3.7) it reads small files of the layouts (the test below: the
# pickled one, archived, in the Keras cache; tests/unit/test_cifar10_reader:
# the binary one); the real 170 MB five times over, once per CI run.
@pytest.mark.one_stack
def test_all_five_layouts_load_identically(reference, real_cifar10, tmp_path,
                                           monkeypatch):
  py_dir = cifar10_layouts.write_py_layout(str(tmp_path), reference)
  bin_tgz = cifar10_layouts.archive(real_cifar10,
                                    str(tmp_path / "cifar-10-binary.tar.gz"))
  py_tgz = cifar10_layouts.archive(py_dir,
                                   str(tmp_path / "cifar-10-python.tar.gz"))
  keras_home = tmp_path / "keras"
  (keras_home / "datasets").mkdir(parents=True)
  os.symlink(py_dir, keras_home / "datasets" / cifar10.PY_DIR)
  monkeypatch.setenv("KERAS_HOME", str(keras_home))

  loaded = {"bin dir": cifar10.load(real_cifar10),
            "py dir": cifar10.load(py_dir),
            "bin tar.gz": cifar10.load(bin_tgz),
            "py tar.gz": cifar10.load(py_tgz),
            "keras cache": cifar10.load(None)}
  assert loaded["keras cache"].source.startswith("Keras cache")
  expected = digest(reference)
  assert {name: digest(d) for name, d in loaded.items()} == {
      name: expected for name in loaded}
  for data in loaded.values():
    assert len(data.train_labels) == 50000 and len(data.test_labels) == 10000


def test_keras_archive_alone_is_found(reference, tmp_path, monkeypatch):
  small = cifar10.Cifar10(reference.train_images[:50], reference.train_labels[:50],
                          reference.test_images[:10], reference.test_labels[:10],
                          "small")
  py_dir = cifar10_layouts.write_py_layout(str(tmp_path / "src"), small)
  (tmp_path / "keras" / "datasets").mkdir(parents=True)
  cifar10_layouts.archive(py_dir, str(tmp_path / "keras" / "datasets" /
                                      "cifar-10-batches-py.tar.gz"))
  monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
  data = cifar10.load(None)
  assert digest(data) == digest(small)
