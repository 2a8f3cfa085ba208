"""legacy_hvd.collectives.strategy_collectives in this process, on TF's
default strategy (one replica: a sum is its input): the collectives a worker
issues, which must be the same, in the same order, on every worker."""
import pytest
import tensorflow.compat.v2 as tf

from legacy_hvd.collectives import strategy_collectives
from legacy_hvd.model import optimizers

# TensorFlow 2 only, as train_mwms.
pytestmark = pytest.mark.one_stack


class RecordingCollectives(strategy_collectives.Collectives):
  """The default strategy's collectives as rank 0's, each sum's inputs
  kept in `sums`."""

  def __init__(self):
    super().__init__(tf.distribute.get_strategy(), 0)
    self.sums = []

  def sum(self, tensors):
    self.sums.append(list(tensors))
    return super().sum(tensors)


def test_broadcast_variables_sums_each_dtype_once_in_the_lists_order():
  # Keras 3's variables name their dtype by a string ('float32'), hashed
  # differently in each process: grouped by a set of dtypes, two workers
  # once summed float32 and int64 in other orders (a collective's type
  # mismatch at np=2), and each Keras variable twice.
  weights = tf.Variable(tf.ones([3]))
  step = tf.Variable(7, dtype=tf.int64)
  optimizer = optimizers.keras("adam", 0.001)
  optimizer.apply_gradients([(tf.zeros_like(weights), weights)])   # slots
  variables = [weights, step] + optimizers.variables(optimizer)
  collectives = RecordingCollectives()
  collectives.broadcast_variables(variables)

  def of_dtype(dtype):
    return [id(v) for v in variables if tf.as_dtype(v.dtype) == dtype]

  assert [[id(v) for v in pack] for pack in collectives.sums] == [
      of_dtype(tf.float32), of_dtype(tf.int64)]
  # Rank 0's values stay its own.
  assert weights.numpy().tolist() == [1.0, 1.0, 1.0] and int(step) == 7
