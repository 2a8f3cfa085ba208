"""tf.data input pipelines over in-memory CIFAR-10 arrays, one shard per rank.

    dataset = train_batches(images_u8, labels_i32, batch_size=64,
                            num_shards=size, shard_index=rank, seed=s)
    dataset = test_batches(images_u8, labels_i32, num_shards=size,
                           shard_index=rank)
    dataset = synthetic_batches(batch_size=64, seed=s)   # --synthetic

Each returns a `tf.data.Dataset` of (float32 [B, 32, 32, 3] normalized images,
int32 [B] labels). The inputs may be numpy arrays (TF2 path) or placeholders
fed once at session start (TF1 path, which keeps 150 MB of pixels out of the
GraphDef that MonitoredTrainingSession writes next to every checkpoint).
Works in graph mode and eagerly; never imports Horovod.
"""
import tensorflow as tf2   # stateless image ops exist only in the TF2 API
import tensorflow.compat.v1 as tf

# Per-channel mean and standard deviation of the CIFAR-10 training pixels,
# on the 0..255 scale: normalization makes each channel ~zero-mean, unit-var.
CHANNEL_MEAN = (125.3, 123.0, 113.9)
CHANNEL_STD = (63.0, 62.1, 66.7)
PAD_PIXELS = 4                 # --augment: pad 4 on each side, crop 32x32 back
TEST_BATCH_SIZE = 500          # evaluation batch per rank; any size is exact


def normalize(images):
  """uint8 [..., 32, 32, 3] -> float32 per-channel standardized pixels."""
  return (tf.cast(images, tf.float32) - CHANNEL_MEAN) / CHANNEL_STD


def train_batches(images, labels, batch_size, num_shards, shard_index, seed,
                  augment=False, skip_examples=0):
  """Endless shuffled training batches of this rank's shard.

  The pipeline shuffles example indices, not images: sharding comes before
  shuffling so the ranks split the examples once and never overlap, and the
  seeded shuffle reorders the shard differently each epoch but identically
  across runs. Pixels are gathered a whole batch at a time. Every rank gets
  whole batches only (drop_remainder), so all ranks run the same steps.
  `skip_examples` (an int64 scalar, may be a placeholder) resumes the stream
  where a run that took that many examples left it: same order, same crops.
  """
  images = tf.convert_to_tensor(images)
  labels = tf.convert_to_tensor(labels)
  num_examples = tf.shape(labels, out_type=tf.int64)[0]
  indices = tf.data.Dataset.range(num_examples).shard(num_shards, shard_index)
  indices = indices.shuffle(_shard_size(labels, num_shards), seed=seed,
                            reshuffle_each_iteration=True).repeat()
  if augment:
    # Stateless ops keyed by (seed, rank, position) keep augmentation
    # reproducible although the map runs in parallel.
    dataset = indices.enumerate().skip(skip_examples).map(
        lambda position, index: (_augment(
            tf.gather(images, index), [seed * 1000 + shard_index, position]),
                                 tf.gather(labels, index)),
        num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.batch(batch_size, drop_remainder=True)
  else:
    dataset = indices.skip(skip_examples).batch(
        batch_size, drop_remainder=True).map(
        lambda batch: (tf.gather(images, batch), tf.gather(labels, batch)),
        num_parallel_calls=tf.data.AUTOTUNE)
  # Normalizing whole batches costs one op per batch instead of one per image.
  dataset = dataset.map(lambda x, y: (normalize(x), y),
                        num_parallel_calls=tf.data.AUTOTUNE)
  return dataset.prefetch(tf.data.AUTOTUNE)


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
                        num_parallel_calls=tf.data.AUTOTUNE)
  return dataset.prefetch(tf.data.AUTOTUNE)


def _shard_size(labels, num_shards):
  return -(-int(labels.shape[0]) // num_shards)


def _augment(image, seed):
  """Random 32x32 crop of the 4-pixel zero-padded image, random h-flip."""
  seed = tf.cast(tf.stack(seed), tf.int64)
  padded = tf.pad(image, [[PAD_PIXELS, PAD_PIXELS], [PAD_PIXELS, PAD_PIXELS],
                          [0, 0]])
  image = tf2.image.stateless_random_crop(padded, tf.shape(image), seed=seed)
  return tf2.image.stateless_random_flip_left_right(image, seed=seed + 1)
