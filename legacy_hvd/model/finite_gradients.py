"""The NaN/Inf check on the averaged gradients, before they are applied.

    gradient = finite_gradients.checked(gradient)   # in any path's step
    finite_gradients.is_non_finite_gradient(error)  # the step failed of it

A plain TensorFlow op, in a graph and eagerly alike: the model side (the
TF1 graph, the TF2 step, the Keras optimizer) uses it without reaching the
distributed side. The averaged gradients are the same on every rank, so
every rank fails the check in the same step, before anything is applied;
legacy_hvd/training/job_faults.py turns the failure into the job's one line.
Never imports Horovod.
"""
import tensorflow.compat.v2 as tf

NON_FINITE_GRADIENT = "non-finite averaged gradient"


def checked(gradient):
  """The gradient, or InvalidArgumentError if it holds NaN or Inf."""
  return tf.debugging.check_numerics(gradient, NON_FINITE_GRADIENT)


def is_non_finite_gradient(error):
  """Whether the failed step `error` (a tf.errors.OpError) was checked()'s."""
  return NON_FINITE_GRADIENT in getattr(error, "message", "")
