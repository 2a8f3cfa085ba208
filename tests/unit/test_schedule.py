"""legacy_hvd.model.schedule: the learning rate scaled with the number of workers,
its linear warm-up, and the steps of an epoch, by hand.

The values are sums and products of powers of two, exact in float32.
"""
import pytest
import tensorflow.compat.v2 as tf   # the TF2 API, on TF 1.15 too

from legacy_hvd.model import schedule


@pytest.mark.parametrize("scaling, workers, scale", [
    ("linear", 8, 8.0),    # 8 x the global batch: 8 x the step
    ("sqrt", 16, 4.0),     # the update's variance kept
    ("none", 16, 1.0),
    ("linear", 1, 1.0),
    ("sqrt", 1, 1.0),
])
def test_lr_scale(scaling, workers, scale):
  assert schedule.lr_scale(scaling, workers) == scale


# base_lr 0.5 scaled x4 to 2.0 over 8 warm-up steps: +0.1875 a step.
@pytest.mark.parametrize("step, rate", [
    (0, 0.5),       # the unscaled rate first
    (2, 0.875),
    (4, 1.25),
    (8, 2.0),       # the scaled rate at the end of the warm-up
    (100, 2.0),     # and after it
])
def test_warm_up_rises_linearly_to_the_scaled_rate(step, rate):
  value = schedule.learning_rate(tf.constant(step, tf.int64), 0.5, 4.0, 8)
  assert value.dtype == tf.float32
  assert float(value.numpy()) == rate


def test_without_warm_up_the_rate_is_scaled_from_step_0():
  value = schedule.learning_rate(tf.constant(0, tf.int64), 0.25, 4.0, 0)
  assert value.dtype == tf.float32 and float(value.numpy()) == 1.0


def test_the_same_rates_inside_a_tf_function():
  # The TF2 path calls it in its tf.function step, on the global step.
  rate = tf.function(lambda step: schedule.learning_rate(step, 0.5, 4.0, 8))
  assert [float(rate(tf.constant(s, tf.int64)).numpy())
          for s in (0, 2, 4, 8, 100)] == [0.5, 0.875, 1.25, 2.0, 2.0]


@pytest.mark.parametrize("examples, batch, workers, steps", [
    (50000, 64, 1, 781),     # 50000 // 64
    (50000, 64, 4, 195),     # each rank's 12500 // 64
    (50000, 128, 3, 130),    # 16666 // 128: the remainder is dropped
    (100, 64, 4, 1),         # never less than one step
])
def test_steps_per_epoch_are_whole_global_batches(examples, batch, workers,
                                                  steps):
  assert schedule.steps_per_epoch(examples, batch, workers) == steps
