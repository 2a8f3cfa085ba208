"""Byte-exact reading of the official binary layout, and the embedded data."""
import numpy as np
import tensorflow as tf

from legacy_hvd.data import cifar10
from legacy_hvd.data import embedded
from legacy_hvd.data import pipeline


def record(label, red, green, blue):
  """One 3,073-byte record: label, then constant R, G and B planes."""
  return bytes([label]) + bytes([red]) * 1024 + bytes([green]) * 1024 + bytes(
      [blue]) * 1024


def write_bin_layout(root, records_per_file):
  layout = root / "cifar-10-batches-bin"
  layout.mkdir()
  for name in cifar10.BIN_FILES + (cifar10.BIN_TEST,):
    (layout / name).write_bytes(b"".join(records_per_file(name)))
  return layout


def test_three_records_decode_exactly(tmp_path):
  known = [record(0, 10, 20, 30), record(9, 255, 0, 1), record(4, 7, 8, 9)]
  layout = write_bin_layout(tmp_path, lambda name: known)
  data = cifar10.load(str(tmp_path))
  assert data.train_images.shape == (15, 32, 32, 3)
  assert data.train_images.dtype == np.uint8
  assert data.train_labels.tolist() == [0, 9, 4] * 5
  assert data.test_labels.tolist() == [0, 9, 4]
  assert data.train_images[1, 17, 3].tolist() == [255, 0, 1]
  assert data.test_images[2, 0, 31].tolist() == [7, 8, 9]
  assert data.source == str(layout)


def test_arrays_are_aligned_for_a_feed_without_a_copy(tmp_path):
  # Files of other sizes than the first grow or trim the array: every path
  # keeps the rows in order and the data on a 64-byte boundary.
  for first, others in ((1, 3), (3, 1)):
    root = tmp_path / f"{first}-{others}"
    root.mkdir()
    counts = dict.fromkeys(cifar10.BIN_FILES, others)
    counts[cifar10.BIN_FILES[0]] = first
    write_bin_layout(root, lambda name: [
        record(i % 10, i, i, i) for i in range(counts.get(name, 2))])
    data = cifar10.load(str(root))
    assert data.train_labels.tolist() == (
        list(range(first)) + list(range(others)) * 4)
    assert data.train_images[:, 0, 0, 0].tolist() == data.train_labels.tolist()
    for array in (data.train_images, data.test_images):
      assert array.ctypes.data % cifar10.ALIGN_BYTES == 0


def test_planes_are_row_major_red_green_blue(tmp_path):
  pixels = np.arange(3072, dtype=np.uint32) % 251   # every byte position distinct mod 251
  raw = bytes([3]) + pixels.astype(np.uint8).tobytes()
  write_bin_layout(tmp_path, lambda name: [raw])
  image = cifar10.load(str(tmp_path / "cifar-10-batches-bin")).test_images[0]
  for channel in range(3):
    for row, col in ((0, 0), (0, 31), (5, 2), (31, 31)):
      assert image[row, col, channel] == pixels[channel * 1024 + row * 32 + col] % 256


def test_normalize_is_per_channel():
  images = np.full((1, 32, 32, 3), 125, np.uint8)
  out = pipeline.normalize(images).numpy()
  expected = [(125 - m) / s for m, s in zip(pipeline.CHANNEL_MEAN,
                                             pipeline.CHANNEL_STD)]
  np.testing.assert_allclose(out[0, 4, 4], expected, rtol=1e-4)


def test_shards_split_the_data_and_batches_are_whole():
  images = np.arange(10, dtype=np.uint8).reshape(10, 1, 1, 1) * np.ones(
      (1, 32, 32, 3), np.uint8)
  labels = np.arange(10, dtype=np.int32)
  seen = []
  for rank in range(2):
    dataset = pipeline.train_batches(images, labels, batch_size=2,
                                     num_shards=2, shard_index=rank, seed=1)
    batches = [y.numpy().tolist() for _, y in dataset.take(5)]
    assert all(len(b) == 2 for b in batches)
    # Declared endless: tf.distribute checks for a last partial batch else.
    assert tf.data.experimental.cardinality(dataset).numpy() == (
        tf.data.experimental.INFINITE_CARDINALITY)
    seen.append(set(sum(batches, [])))
  assert seen[0] == {0, 2, 4, 6, 8} and seen[1] == {1, 3, 5, 7, 9}


def test_embedded_dataset_is_deterministic_and_balanced(tmp_path):
  first = embedded.ensure_generated(str(tmp_path / "a"))
  second = embedded.ensure_generated(str(tmp_path / "b"))
  for name in cifar10.BIN_FILES + (cifar10.BIN_TEST,):
    assert (tmp_path / "a" / "cifar-10-batches-bin" / name).read_bytes() == (
        tmp_path / "b" / "cifar-10-batches-bin" / name).read_bytes()
  data = cifar10.load(first)
  assert len(data.train_labels) == 5 * embedded.TRAIN_PER_FILE
  assert np.bincount(data.test_labels).tolist() == [embedded.TEST_IMAGES // 10] * 10
  assert second.endswith("cifar-10-batches-bin")


def test_augmentation_crops_flips_and_repeats_exactly():
  # Pixel value = column + 1, so shifts and flips show and 0 means padding.
  columns = np.tile(np.arange(1, 33, dtype=np.uint8)[None, :, None], (32, 1, 3))
  images = np.stack([columns] * 8)
  labels = np.zeros(8, np.int32)

  def first_batch():
    dataset = pipeline.train_batches(images, labels, batch_size=8,
                                     num_shards=1, shard_index=0, seed=5,
                                     augment=True)
    assert tf.data.experimental.cardinality(dataset).numpy() == (
        tf.data.experimental.INFINITE_CARDINALITY)
    x, _ = next(iter(dataset))
    # Undo the normalization of the red channel to get pixel values back.
    return np.rint(x.numpy()[..., 0] * pipeline.CHANNEL_STD[0]
                   + pipeline.CHANNEL_MEAN[0])

  batch = first_batch()
  np.testing.assert_array_equal(batch, first_batch())   # same seed, same crops
  assert not all(np.array_equal(batch[0], b) for b in batch[1:])
  for image in batch:
    row = image[16]                    # a middle row: away from vertical pad
    inner = row[(row != 0)]
    steps = np.diff(inner)
    # Consecutive columns, shifted and possibly mirrored; padding is zeros.
    assert set(steps) <= {1, -1} and len(set(steps)) == 1
    assert 28 <= len(inner) <= 32
