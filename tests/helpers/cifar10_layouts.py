"""Writes CIFAR-10 in each official layout, the way the publisher packs it;
and damaged layouts, as a user's disk may hold them.

    layout = write_bin_layout(root, tiny_data())   # or write_py_layout
    archive(layout, path)                          # the .tar.gz of it
    data_dir, expected = truncated_file(root)      # a damage: where, and
                                                   # what its one line says
"""
import os
import pickle
import tarfile

import numpy as np

from legacy_hvd.data import cifar10


def planes(images):
  """uint8 [N, 32, 32, 3] -> [N, 3072]: red plane, green, blue, row-major."""
  return images.transpose(0, 3, 1, 2).reshape(len(images), -1)


def batch_files(data, names):
  """Pairs the layout's six file names with five train chunks and the test set."""
  train = zip(np.array_split(data.train_images, 5),
              np.array_split(data.train_labels, 5))
  return zip(names, [*train, (data.test_images, data.test_labels)])


def write_bin_layout(root, data):
  layout = os.path.join(root, cifar10.BIN_DIR)
  os.makedirs(layout)
  for name, (images, labels) in batch_files(
      data, cifar10.BIN_FILES + (cifar10.BIN_TEST,)):
    records = np.concatenate([labels[:, None].astype(np.uint8),
                              planes(images)], axis=1)
    records.tofile(os.path.join(layout, name))
  return layout


def write_py_layout(root, data):
  """Pickled dicts with bytes keys, as the Python 2 originals unpickle."""
  layout = os.path.join(root, cifar10.PY_DIR)
  os.makedirs(layout)
  for name, (images, labels) in batch_files(
      data, cifar10.PY_FILES + (cifar10.PY_TEST,)):
    batch = {b"batch_label": name.encode(), b"labels": labels.tolist(),
             b"data": planes(images),
             b"filenames": [b"%d.png" % i for i in range(len(labels))]}
    with open(os.path.join(layout, name), "wb") as f:
      pickle.dump(batch, f, protocol=2)
  with open(os.path.join(layout, "batches.meta"), "wb") as f:
    pickle.dump({b"label_names": [n.encode() for n in cifar10.CLASS_NAMES]}, f)
  return layout


def archive(layout, path):
  """`layout` as a .tar.gz at `path`, stored uncompressed (level 0: still
  gzip's format, what the loader reads; compressing 170 MB cost the test
  ~6 s an archive)."""
  with tarfile.open(path, "w:gz", compresslevel=0) as tar:
    tar.add(layout, arcname=os.path.basename(layout))
  return path



def tiny_data(n=20):
  """A Cifar10 of `n` random train and `n` test images, labels 0..9 in turn."""
  rng = np.random.RandomState(0)
  return cifar10.Cifar10(rng.randint(0, 256, (n, 32, 32, 3)).astype(np.uint8),
                         np.arange(n, dtype=np.int32) % 10,
                         rng.randint(0, 256, (n, 32, 32, 3)).astype(np.uint8),
                         np.arange(n, dtype=np.int32) % 10, "tiny")


# Damaged layouts under `root`: each returns (the path to give as
# --data_dir, what the reader's one line about it says).

def missing_file(root):
  layout = write_bin_layout(root, tiny_data())
  os.remove(os.path.join(layout, "data_batch_3.bin"))
  return layout, "data_batch_3.bin: missing"


def truncated_file(root):
  layout = write_bin_layout(root, tiny_data())
  path = os.path.join(layout, "data_batch_2.bin")
  with open(path, "r+b") as f:
    f.truncate(os.path.getsize(path) - 100)
  return layout, "not a whole number of 3073-byte records"


def label_out_of_range(root):
  layout = write_bin_layout(root, tiny_data())
  path = os.path.join(layout, "test_batch.bin")
  with open(path, "r+b") as f:
    f.seek(3073 * 2)     # the third record's label byte
    f.write(bytes([12]))
  return layout, "test_batch.bin: record 2 has label 12; expected 0..9"


def pickle_without_keys(root):
  layout = write_py_layout(root, tiny_data())
  with open(os.path.join(layout, "data_batch_1"), "wb") as f:
    pickle.dump({b"pixels": np.zeros((4, 3072), np.uint8)}, f)
  return layout, "data_batch_1: pickle lacks the keys b'data' and b'labels'"


def corrupt_archive(root):
  layout = write_bin_layout(os.path.join(root, "src"), tiny_data())
  path = archive(layout, os.path.join(root, "cifar-10-binary.tar.gz"))
  with open(path, "r+b") as f:
    f.seek(os.path.getsize(path) // 2)
    f.write(b"\0" * 64)
  return path, "not a readable .tar.gz archive"


def nonexistent_path(root):
  return os.path.join(root, "nowhere"), "no such file or directory"


def pickle_with_code(root):
  layout = write_py_layout(root, tiny_data())
  with open(os.path.join(layout, "test_batch"), "wb") as f:
    pickle.dump(os.system, f)   # a pickle that would call a function
  return layout, "refusing to load"
