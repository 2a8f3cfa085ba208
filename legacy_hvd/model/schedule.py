"""Learning-rate scaling with the number of workers, and linear warm-up.

    scale = lr_scale("linear", num_workers)                  # plain float
    lr = learning_rate(global_step, base_lr, scale, warmup_steps)

`learning_rate` uses only tf ops on the step, so it works in the TF1 graph and
inside the TF2 path's tf.function alike. Never imports Horovod.
"""
import math

import tensorflow.compat.v1 as tf


def lr_scale(scaling, num_workers):
  """How much larger the rate is with `num_workers` workers than with one.

  linear: the global batch is num_workers times larger, so take as many times
  larger steps (Goyal et al. 2017); sqrt: keeps the update's variance
  constant (Krizhevsky 2014); none: the rate does not change.
  """
  return {"linear": float(num_workers),
          "sqrt": math.sqrt(num_workers),
          "none": 1.0}[scaling]


def learning_rate(global_step, base_lr, scale, warmup_steps):
  """float32 scalar: base_lr x scale, reached linearly over warmup_steps.

  During warm-up the rate rises from the unscaled base_lr at step 0 to
  base_lr x scale at `warmup_steps`, so a large global batch does not take
  its full-size first steps from random weights.
  """
  target = base_lr * scale
  if warmup_steps <= 0:
    return tf.constant(target, tf.float32)
  progress = tf.minimum(tf.cast(global_step, tf.float32) / warmup_steps, 1.0)
  return tf.cast(base_lr + (target - base_lr) * progress, tf.float32)


def steps_per_epoch(num_examples, batch_size, num_workers):
  """Whole global batches in one pass: each rank has 1/num_workers of the data."""
  return max(1, (num_examples // num_workers) // batch_size)
