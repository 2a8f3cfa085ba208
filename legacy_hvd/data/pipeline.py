"""tf.data pipelines over in-memory CIFAR-10 arrays, one shard per rank:
(float32 [B, 32, 32, 3] normalized images, int32 [B] labels).

The TF1 path feeds the arrays through placeholders once, keeping the pixels
out of the GraphDef saved beside every checkpoint. Every random choice is a
stateless draw, so TF 1.15 and TF 2 give the same batches."""
import numpy as np
import tensorflow.compat.v1 as tf

from legacy_hvd.common import compat

# Per-channel mean and standard deviation of the training pixels (0..255).
CHANNEL_MEAN = (125.3, 123.0, 113.9)
CHANNEL_STD = (63.0, 62.1, 66.7)
PAD_PIXELS = 4                 # --augment: pad 4 on each side, crop 32x32 back
TEST_BATCH_SIZE = 500          # evaluation batch per rank; any size is exact
ENDLESS = 2**62                # "no end" for the epoch counter
_INVERSE_STD = tuple(float(np.float32(1) / np.float32(s)) for s in CHANNEL_STD)


def normalize(images):
  """uint8 [..., 32, 32, 3] -> float32 per-channel standardized pixels.
  Reciprocals: Grappler rewrites a division so in a session's graph, not in
  every tf.data function (one ulp apart). Whole [32, 32, 3] constants: a
  broadcast over leading dimensions runs vectorized, over a last 3 not."""
  return (tf.cast(images, tf.float32) - _pixelwise(CHANNEL_MEAN)) * (
      _pixelwise(_INVERSE_STD))


def train_batches(images, labels, batch_size, num_shards, shard_index, seed,
                  augment=False, skip_examples=0):
  """Endless shuffled whole batches of this rank's shard, sharded before the
  shuffle; each epoch's order a stateless permutation of (seed, rank, epoch),
  alike on every TensorFlow (tf.data's shuffle is not). `skip_examples` (int64,
  may be a placeholder) resumes a run that took that many: same order, crops."""
  images = tf.convert_to_tensor(images)
  labels = tf.convert_to_tensor(labels)
  stream = seed * 1000 + shard_index    # this rank's random stream
  shard = tf.range(shard_index, tf.shape(labels, out_type=tf.int64)[0],
                   num_shards, dtype=tf.int64)
  shard_size = tf.size(shard, out_type=tf.int64)
  skip_examples = tf.cast(skip_examples, tf.int64)
  indices = tf.data.Dataset.range(skip_examples // shard_size, ENDLESS).map(
      lambda epoch: _epoch_order(shard, stream, epoch)).flat_map(
          tf.data.Dataset.from_tensor_slices).skip(skip_examples % shard_size)
  if augment:
    # Stateless ops keyed by (seed, rank, position in the stream) keep
    # augmentation reproducible although the map runs in parallel.
    positions = tf.data.Dataset.range(skip_examples, ENDLESS)
    dataset = tf.data.Dataset.zip((positions, indices)).map(
        lambda position, index: (_augment(tf.gather(images, index),
                                          [stream, position]),
                                 tf.gather(labels, index)),
        num_parallel_calls=compat.AUTOTUNE)
    dataset = dataset.batch(batch_size, drop_remainder=True)
  else:
    dataset = indices.batch(batch_size, drop_remainder=True).map(
        lambda batch: (tf.gather(images, batch), tf.gather(labels, batch)),
        num_parallel_calls=compat.AUTOTUNE)
  # Normalizing whole batches costs one op per batch instead of one per image.
  dataset = dataset.map(lambda x, y: (normalize(x), y),
                        num_parallel_calls=compat.AUTOTUNE)
  # Endless already; repeat() declares it (flat_map's cardinality is unknown):
  # tf.distribute then skips its per-step all-reduce of "is there a batch?".
  return dataset.repeat().prefetch(compat.AUTOTUNE)


def synthetic_batches(batch_size, seed):
  """The same random normalized batch forever: compute without input cost."""
  images = tf.random.stateless_normal([batch_size, 32, 32, 3], seed=[seed, 0])
  labels = tf.random.stateless_uniform([batch_size], seed=[seed, 1], minval=0,
                                       maxval=10, dtype=tf.int32)
  return tf.data.Dataset.from_tensors((images, labels)).repeat()


def test_batches(images, labels, num_shards, shard_index,
                 batch_size=TEST_BATCH_SIZE):
  """One pass over this rank's shard of the test set, every example once."""
  dataset = tf.data.Dataset.from_tensor_slices((images, labels))
  dataset = dataset.shard(num_shards, shard_index).batch(batch_size)
  dataset = dataset.map(lambda x, y: (normalize(x), y),
                        num_parallel_calls=compat.AUTOTUNE)
  return dataset.prefetch(compat.AUTOTUNE)


def _pixelwise(per_channel):
  """float32 [32, 32, 3]: each pixel holds the per-channel values."""
  return tf.constant(np.tile(np.float32(per_channel), [32, 32, 1]))


def _epoch_order(shard, stream, epoch):
  """int64 [shard size]: `shard` permuted by sorting float64 stateless draws,
  keyed by (stream, -1 - epoch), never meeting augmentation's counters (>= 0);
  float64 keys leave ties at odds of about n^2 / 2^53."""
  keys = tf.random.stateless_uniform(
      tf.shape(shard), seed=tf.stack([tf.constant(stream, tf.int64),
                                      -1 - epoch]), dtype=tf.float64)
  return tf.gather(shard, tf.argsort(keys))


def _augment(image, seed):
  """Random 32x32 crop of the 4-pixel zero-padded image, random h-flip."""
  seed = tf.cast(tf.stack(seed), tf.int64)
  padded = tf.pad(image, [[PAD_PIXELS, PAD_PIXELS], [PAD_PIXELS, PAD_PIXELS],
                          [0, 0]])
  image = compat.stateless_random_crop(padded, tf.shape(image), seed=seed)
  return compat.stateless_random_flip_left_right(image, seed=seed + 1)
