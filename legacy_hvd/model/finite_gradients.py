"""The NaN/Inf check on the averaged gradients, before they are applied.

A plain TensorFlow op, so the model side uses it without reaching the
distributed side. The averaged gradients are the same on every rank, so
every rank fails it in the same step, before anything is applied.
"""
import tensorflow.compat.v2 as tf

NON_FINITE_GRADIENT = "non-finite averaged gradient"


def checked(gradient):
  """The gradient, or InvalidArgumentError if it holds NaN or Inf."""
  return tf.debugging.check_numerics(gradient, NON_FINITE_GRADIENT)


def is_non_finite_gradient(error):
  """Whether the failed step `error` (a tf.errors.OpError) was checked()'s."""
  return NON_FINITE_GRADIENT in getattr(error, "message", "")
