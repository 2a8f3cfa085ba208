"""Test-set scoring spread over the ranks: per-class counts and the loss sum
are added by `sum_fn` (allreduce, op=Sum), so every test image counts once
whatever the number of ranks. `run` is a collective: every rank calls it."""
import numpy as np
import tensorflow.compat.v1 as tf

from legacy_hvd.data import pipeline
from legacy_hvd.model import cnn

NUM_CLASSES = cnn.NUM_CLASSES


class Evaluation:

  def __init__(self, test_shape, params, num_shards, shard_index, sum_fn):
    """Builds the ops; test_shape is the uint8 test images' [N, 32, 32, 3]."""
    self._images = tf.placeholder(tf.uint8, test_shape, name="test_images")
    self._labels = tf.placeholder(tf.int32, test_shape[:1], name="test_labels")
    dataset = pipeline.test_batches(self._images, self._labels, num_shards,
                                    shard_index)
    self._iterator = tf.data.make_initializable_iterator(dataset)
    images, labels = self._iterator.get_next()
    self._batch_counts = batch_counts(cnn.forward(images, params), labels)
    self._local_counts = tf.placeholder(tf.float64, [1 + 2 * NUM_CLASSES])
    self._summed_counts = sum_fn(self._local_counts)

  def run(self, session, test_images, test_labels):
    """Scores this rank's shard, sums over ranks; returns a metrics dict."""
    session.run(self._iterator.initializer,
                {self._images: test_images, self._labels: test_labels})
    local = np.zeros(1 + 2 * NUM_CLASSES)
    while True:
      try:
        local += session.run(self._batch_counts)
      except tf.errors.OutOfRangeError:
        break
    counts = session.run(self._summed_counts, {self._local_counts: local})
    return metrics_from_counts(counts)


def batch_counts(logits, labels):
  """float64 [21]: [loss sum, correct per class x10, examples per class x10].
  Sums, not means, so batches and ranks of any size add up exactly."""
  loss_sum = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=labels, logits=logits))
  correct = tf.equal(tf.argmax(logits, axis=1, output_type=tf.int32), labels)
  per_class = lambda weights: tf.math.bincount(
      labels, weights=weights, minlength=NUM_CLASSES, maxlength=NUM_CLASSES,
      dtype=tf.float64)
  return tf.concat([tf.cast(loss_sum, tf.float64)[None],
                    per_class(tf.cast(correct, tf.float64)),
                    per_class(None)], axis=0)


def metrics_from_counts(counts):
  """[loss_sum, correct per class x10, total per class x10] -> metrics dict."""
  loss_sum = counts[0]
  correct = counts[1:1 + NUM_CLASSES]
  total = counts[1 + NUM_CLASSES:]
  examples = total.sum()
  return {
      "test_examples": int(examples),
      "test_accuracy": float(correct.sum() / examples),
      "test_loss": float(loss_sum / examples),
      "per_class_accuracy": [float(c / t) if t else None
                             for c, t in zip(correct, total)],
  }


class EagerEvaluation:
  """The TF2 variants' evaluation; `forward`: float32 [N, 32, 32, 3] -> logits
  [N, 10]. Built and traced once, run as often as due."""

  def __init__(self, forward, test_images, test_labels, num_shards,
               shard_index, sum_fn):
    self._counts_of = tf.function(lambda images, labels: batch_counts(
        forward(images), labels))
    self._batches = pipeline.test_batches(test_images, test_labels,
                                          num_shards, shard_index)
    self._sum_fn = sum_fn

  def run(self):
    """Scores this shard, sums over ranks (a collective); a metrics dict."""
    local = tf.zeros([1 + 2 * NUM_CLASSES], tf.float64)
    for images, labels in self._batches:
      local += self._counts_of(images, labels)
    return metrics_from_counts(self._sum_fn(local).numpy())

