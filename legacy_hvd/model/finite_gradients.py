"""The NaN/Inf check on the averaged gradients, before they are applied: a
plain TensorFlow op; the averaged gradients are alike on every rank, so every
rank fails it in the same step."""
import tensorflow.compat.v2 as tf

NON_FINITE_GRADIENT = "non-finite averaged gradient"


def checked(gradient):
  """The gradient, or InvalidArgumentError if it holds NaN or Inf."""
  return tf.debugging.check_numerics(gradient, NON_FINITE_GRADIENT)


def is_non_finite_gradient(error):
  """Whether the failed step `error` (a tf.errors.OpError) was checked()'s."""
  return NON_FINITE_GRADIENT in getattr(error, "message", "")
