"""A small, deterministic, learnable CIFAR-10-shaped dataset in the official
binary layout, made on first use so the trainer runs without a download. Each
class is a smooth colour pattern, shifted and buried in noise: a CNN learns it
well above chance within an epoch, but not instantly."""
import os

import numpy as np

VERSION = 3                     # bump when the generator's output changes
TRAIN_PER_FILE = 4000           # five files, as in the real layout
TEST_IMAGES = 2000
SEED = 20091231                 # fixed: every machine makes the same bytes
PATTERN_CELLS = 4               # each class pattern is 4x4 cells, upsampled
PATTERN_CONTRAST = 18.0         # pixel amplitude of the class pattern
NOISE_STD = 64.0                # pixel noise; keeps the task from being trivial
MAX_SHIFT = 4                   # random translation in pixels, each axis


def cache_root():
  base = os.environ.get("XDG_CACHE_HOME",
                        os.path.join(os.path.expanduser("~"), ".cache"))
  return os.path.join(base, "legacy-hvd", f"embedded-cifar10-v{VERSION}")


def ensure_generated(root=None):
  """Writes the dataset under `root` unless present; returns the layout dir.
  Ranks may race: each file is renamed into place and its bytes are
  deterministic, so the last rename leaves the same file."""
  out = os.path.join(root or cache_root(), "cifar-10-batches-bin")
  names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
  if all(os.path.exists(os.path.join(out, n)) for n in names):
    return out
  os.makedirs(out, exist_ok=True)
  rng = np.random.RandomState(SEED)
  patterns = _class_patterns(rng)
  for name in names:
    count = TEST_IMAGES if name.startswith("test") else TRAIN_PER_FILE
    _write_atomically(os.path.join(out, name), _records(rng, patterns, count))
  return out


def _class_patterns(rng):
  """float32 [10, 32, 32, 3] smooth patterns in [-1, 1]."""
  coarse = rng.uniform(-1, 1, size=(10, PATTERN_CELLS, PATTERN_CELLS, 3))
  scale = 32 // PATTERN_CELLS
  return np.repeat(np.repeat(coarse, scale, axis=1), scale, axis=2)


def _records(rng, patterns, count):
  """uint8 [count, 3073] binary-layout records with balanced labels."""
  labels = np.arange(count) % 10
  rng.shuffle(labels)
  shifts = rng.randint(-MAX_SHIFT, MAX_SHIFT + 1, size=(count, 2))
  images = np.stack([np.roll(patterns[y], tuple(s), axis=(0, 1))
                     for y, s in zip(labels, shifts)])
  images = 128 + PATTERN_CONTRAST * images + rng.normal(0, NOISE_STD,
                                                        images.shape)
  pixels = np.clip(np.rint(images), 0, 255).astype(np.uint8)
  planes = pixels.transpose(0, 3, 1, 2).reshape(count, -1)
  return np.concatenate([labels[:, None].astype(np.uint8), planes], axis=1)


def _write_atomically(path, records):
  tmp = f"{path}.tmp-{os.getpid()}"
  records.tofile(tmp)
  os.replace(tmp, path)
