"""Learning-rate scaling with the number of workers, and linear warm-up, in tf
ops on the step: the same in the TF1 graph and in a tf.function."""
import collections
import math

import tensorflow.compat.v1 as tf


def lr_scale(scaling, num_workers):
  """The rate's factor for `num_workers`: linear takes steps as many times
  larger as the batch (Goyal et al. 2017), sqrt keeps the update's variance
  (Krizhevsky 2014), none keeps the rate."""
  return {"linear": float(num_workers),
          "sqrt": math.sqrt(num_workers),
          "none": 1.0}[scaling]


def learning_rate(global_step, base_lr, scale, warmup_steps):
  """float32 scalar: from the unscaled base_lr at step 0 to base_lr x scale at
  `warmup_steps`, so a large global batch does not take its full-size first
  steps from random weights."""
  target = base_lr * scale
  if warmup_steps <= 0:
    return tf.constant(target, tf.float32)
  progress = tf.minimum(tf.cast(global_step, tf.float32) / warmup_steps, 1.0)
  return tf.cast(base_lr + (target - base_lr) * progress, tf.float32)


class Schedule(collections.namedtuple("Schedule",
                                      "base_lr scale warmup_steps")):
  """A run's learning_rate arguments, handed down as one value."""

  def rate(self, global_step):
    return learning_rate(global_step, *self)


def steps_per_epoch(num_examples, batch_size, num_workers):
  """Whole global batches in one pass: each rank has 1/num_workers of the data."""
  return max(1, (num_examples // num_workers) // batch_size)
