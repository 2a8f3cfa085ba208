"""Writes CIFAR-10 in each official layout, the way the publisher packs it."""
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
  with tarfile.open(path, "w:gz", compresslevel=1) as tar:
    tar.add(layout, arcname=os.path.basename(layout))
  return path
