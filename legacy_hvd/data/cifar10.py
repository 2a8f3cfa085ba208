"""Reads CIFAR-10 from any of its official layouts into validated numpy arrays:
uint8 [N, 32, 32, 3] images and int32 [N] labels 0..9.

Layouts (`data_dir` may name any of them, or a directory holding one):
  cifar-10-batches-bin/   data_batch_1.bin .. data_batch_5.bin, test_batch.bin;
                          each record is 1 label byte + 3,072 pixel bytes
                          (1,024 red, then green, then blue, row-major)
  cifar-10-batches-py/    the same files pickled: dicts with b"data" uint8
                          [10000, 3072] (the same plane order) and b"labels"
  cifar-10-binary.tar.gz / cifar-10-python.tar.gz   either, read in memory

Any damage is reported as one `DataError` naming the file and what is wrong."""
import collections
import gzip
import io
import os
import pickle
import tarfile
import zlib

import numpy as np

from legacy_hvd.data import embedded

IMAGE_SHAPE = (32, 32, 3)
PIXELS = 32 * 32 * 3
RECORD_BYTES = 1 + PIXELS          # label byte + pixel bytes, binary layout
ALIGN_BYTES = 64   # a fed array this aligned is not copied (see _aligned_empty)
NUM_CLASSES = 10
TRAIN_BATCHES = 5
CLASS_NAMES = ("airplane", "automobile", "bird", "cat", "deer",
               "dog", "frog", "horse", "ship", "truck")

BIN_DIR, PY_DIR = "cifar-10-batches-bin", "cifar-10-batches-py"
BIN_FILES = tuple(f"data_batch_{i}.bin" for i in range(1, TRAIN_BATCHES + 1))
BIN_TEST = "test_batch.bin"
PY_FILES = tuple(f"data_batch_{i}" for i in range(1, TRAIN_BATCHES + 1))
PY_TEST = "test_batch"

Cifar10 = collections.namedtuple(
    "Cifar10", "train_images train_labels test_images test_labels source")


class DataError(Exception):
  """Input data that cannot be used; the message is one line for the user."""


def keras_cache_dir():
  """Where Keras keeps cifar-10-batches-py and its archive."""
  keras_home = os.environ.get("KERAS_HOME",
                              os.path.join(os.path.expanduser("~"), ".keras"))
  return os.path.join(keras_home, "datasets")


def load(data_dir=None):
  """Returns Cifar10 from `data_dir`, else the Keras cache, else embedded data."""
  if data_dir is not None:
    return _load_path(data_dir)
  cache = keras_cache_dir()
  for candidate in (os.path.join(cache, PY_DIR),
                    os.path.join(cache, PY_DIR + ".tar.gz")):
    if os.path.exists(candidate):
      data = _load_path(candidate)
      return data._replace(source=f"Keras cache: {data.source}")
  generated = embedded.ensure_generated()
  return _load_path(generated)._replace(
      source=f"embedded generated dataset, not real CIFAR-10: {generated}")


def _load_path(path):
  if os.path.isfile(path):
    if not path.endswith((".tar.gz", ".tgz")):
      raise DataError(f"{path}: not a CIFAR-10 archive; expected a .tar.gz "
                      "or a directory in an official layout")
    return _load_archive(path)
  if not os.path.isdir(path):
    raise DataError(f"{path}: no such file or directory; expected CIFAR-10 "
                    "as a directory or .tar.gz archive")
  for layout_dir, names, reader in ((BIN_DIR, BIN_FILES, _parse_bin),
                                    (PY_DIR, PY_FILES, _parse_py)):
    for directory in (path, os.path.join(path, layout_dir)):
      if os.path.exists(os.path.join(directory, names[0])):
        test_name = BIN_TEST if reader is _parse_bin else PY_TEST
        return _assemble(_read_dir(directory, names + (test_name,)), reader,
                         names, test_name, source=directory)
  raise DataError(f"{path}: no CIFAR-10 found; expected {BIN_DIR}/ "
                  f"({BIN_FILES[0]}..) or {PY_DIR}/ ({PY_FILES[0]}..) "
                  "or a directory holding one")


def _read_dir(directory, names):
  """{name: (path, read)}: every file is checked first, read() later, one
  at a time (see _assemble)."""
  contents = {}
  for name in names:
    file_path = os.path.join(directory, name)
    if not os.path.isfile(file_path):
      raise DataError(f"{file_path}: missing; a CIFAR-10 directory holds "
                      + ", ".join(names))
    contents[name] = (file_path, lambda file_path=file_path: _read(file_path))
  return contents


def _read(file_path):
  with open(file_path, "rb") as f:
    return f.read()


def _load_archive(path):
  try:
    # Decompress whole first: gzip checks its CRC at the end, while tarfile
    # would take damage midway for the end of the archive and say less.
    with gzip.open(path) as stream:
      unpacked = io.BytesIO(stream.read())
    with tarfile.open(fileobj=unpacked) as tar:
      members = {m.name: m for m in tar.getmembers() if m.isfile()}
      for layout_dir, names, test_name, reader in (
          (BIN_DIR, BIN_FILES, BIN_TEST, _parse_bin),
          (PY_DIR, PY_FILES, PY_TEST, _parse_py)):
        wanted = [f"{layout_dir}/{n}" for n in names + (test_name,)]
        if not any(w in members for w in wanted):
          continue
        contents = {}
        for name, member in zip(names + (test_name,), wanted):
          if member not in members:
            raise DataError(f"{path}: archive lacks {member}")
          contents[name] = (f"{path}:{member}",
                            lambda m=members[member]: tar.extractfile(m).read())
        return _assemble(contents, reader, names, test_name, source=path)
  except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
    raise DataError(f"{path}: not a readable .tar.gz archive ({e})") from None
  raise DataError(f"{path}: archive holds neither {BIN_DIR}/ nor {PY_DIR}/")


def _assemble(contents, reader, train_names, test_name, source):
  """Parses one file at a time straight into its rows of one array sized from
  the first file: the data plus one file at the peak, not three copies."""
  images, labels, filled = None, [], 0
  for name in train_names:
    label, read = contents[name]
    planes, file_labels = reader(label, read())
    if images is None:
      images = _aligned_empty(len(planes) * len(train_names))
    if filled + len(planes) > len(images):
      images = _aligned_copy(images[:filled], filled + len(planes))
    images[filled:filled + len(planes)] = _to_hwc(planes)
    labels.append(file_labels)
    filled += len(planes)
    del planes
  if filled < len(images):
    images = _aligned_copy(images[:filled], filled)
  label, read = contents[test_name]
  test_planes, test_labels = reader(label, read())
  test_images = _aligned_copy(_to_hwc(test_planes), len(test_planes))
  return Cifar10(images, np.concatenate(labels), test_images, test_labels,
                 source)


def _aligned_empty(count):
  """An uninitialized uint8 [count, 32, 32, 3] array on a 64-byte boundary: TF
  feeds it uncopied, while numpy's start 16 bytes past one, and the copy adds
  the training set to every rank's peak memory (docs/performance.md)."""
  size = count * PIXELS
  buffer = np.empty(size + ALIGN_BYTES, np.uint8)
  offset = -buffer.ctypes.data % ALIGN_BYTES
  return buffer[offset:offset + size].reshape((count,) + IMAGE_SHAPE)


def _aligned_copy(images, count):
  """The first len(images) rows of a new aligned array of `count` rows."""
  copy = _aligned_empty(count)
  copy[:len(images)] = images
  return copy


def _parse_bin(name, raw):
  """Binary-layout bytes -> (uint8 [N, 3072] planes, int32 [N] labels)."""
  if not raw or len(raw) % RECORD_BYTES:
    raise DataError(f"{name}: {len(raw)} bytes is not a whole number of "
                    f"{RECORD_BYTES}-byte records")
  records = np.frombuffer(raw, np.uint8).reshape(-1, RECORD_BYTES)
  return _checked(name, records[:, 1:], records[:, 0])


def _parse_py(name, raw):
  """Python-layout pickle bytes -> (uint8 [N, 3072] planes, int32 [N])."""
  try:
    batch = _NumpyOnlyUnpickler(io.BytesIO(raw), encoding="bytes").load()
  except Exception as e:  # pickle raises many types for damaged bytes
    raise DataError(f"{name}: not a readable CIFAR-10 pickle ({e})") from None
  if not isinstance(batch, dict) or not {b"data", b"labels"} <= set(batch):
    keys = sorted(batch) if isinstance(batch, dict) else type(batch).__name__
    raise DataError(f"{name}: pickle lacks the keys b'data' and b'labels' "
                    f"(found {keys})")
  data = np.asarray(batch[b"data"])
  if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != PIXELS:
    raise DataError(f"{name}: b'data' is {data.dtype} {list(data.shape)}; "
                    f"expected uint8 [N, {PIXELS}]")
  labels = np.asarray(batch[b"labels"])
  if labels.shape != (len(data),):
    raise DataError(f"{name}: {labels.size} labels for {len(data)} images")
  return _checked(name, data, labels)


def _checked(name, planes, labels):
  bad = np.flatnonzero((labels < 0) | (labels >= NUM_CLASSES))
  if bad.size:
    raise DataError(f"{name}: record {bad[0]} has label {labels[bad[0]]}; "
                    f"expected 0..{NUM_CLASSES - 1}")
  return planes, labels.astype(np.int32)


def _to_hwc(planes):
  """uint8 [N, 3072] R, G, B planes viewed as [N, 32, 32, 3], as TF wants."""
  return planes.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)


class _NumpyOnlyUnpickler(pickle.Unpickler):
  """Unpickles CIFAR-10 batches, refusing any global but numpy's array types: a
  pickle can run arbitrary code when loaded; a data file has no need to."""
  NUMPY_NAMES = {"_reconstruct", "ndarray", "dtype", "scalar"}

  def find_class(self, module, name):
    # Python 3 pickles of bytes at protocol 2 rebuild them with _codecs.encode.
    if ((module.split(".")[0] == "numpy" and name in self.NUMPY_NAMES)
        or (module, name) == ("_codecs", "encode")):
      return super().find_class(module, name)
    raise pickle.UnpicklingError(f"refusing to load {module}.{name}")
