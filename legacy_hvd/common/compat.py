"""How the supported TensorFlow and Python versions differ, in one place:
compat.TF1, compat.AUTOTUNE, compat.enable_v2_behavior,
compat.enable_op_determinism, compat.estimator, compat.package_version,
compat.stateless_random_crop, compat.stateless_random_flip_left_right and
their TF 1.15 stand-ins compat.crop_from_uniform_draws and
compat.flip_from_uniform_draw (bit for bit the TF 2 ops' results).

Supported: TensorFlow 1.15.5 on Python 3.7, 2.15 on 3.9-3.11, 2.16 and 2.18
on 3.9-3.12, 2.21 on 3.10-3.13 (without Horovod; docs/stacks.md). Keras
differs on its own (model/keras_compat.py)."""
import os

import tensorflow as tf

TF1 = tf.version.VERSION.startswith("1.")
# tf.data.AUTOTUNE is TF 2.3+; the experimental name exists everywhere.
AUTOTUNE = tf.data.experimental.AUTOTUNE
_INT32_MAX = 2**31 - 1


def enable_v2_behavior():
  """Eager execution and the v2 APIs (a no-op on TF 2), before any op is built;
  on TF 1.15 without tensor equality, which cannot hash a variable, and
  Horovod's DistributedGradientTape keys its gradients by one."""
  if TF1:
    tf.compat.v1.enable_v2_behavior()
    tf.compat.v1.disable_tensor_equality()


def enable_op_determinism():
  """Deterministic kernels from here on (before any session or op runs); TF
  1.15 reads TF_DETERMINISTIC_OPS=1 instead of the TF >= 2.8 API."""
  enable = getattr(tf.config.experimental, "enable_op_determinism", None)
  if enable is not None:
    enable()
  else:
    os.environ["TF_DETERMINISTIC_OPS"] = "1"


def estimator():
  """tf.compat.v1.estimator, or None: TensorFlow 2.16 removed it."""
  try:
    return tf.compat.v1.estimator
  except (AttributeError, ImportError):
    return None


def stateless_random_crop(image, size, seed):
  """A crop of `size` at an offset that is a pure function of `seed` (TF 2's
  op, else crop_from_uniform_draws: the same draws, the same crops)."""
  crop = getattr(tf.compat.v2.image, "stateless_random_crop",
                 crop_from_uniform_draws)
  return crop(image, size, seed=seed)


def stateless_random_flip_left_right(image, seed):
  """image [H, W, C] mirrored or not by a draw from `seed` (TF 2's op, else
  flip_from_uniform_draw: the same rule)."""
  flip = getattr(tf.compat.v2.image, "stateless_random_flip_left_right",
                 flip_from_uniform_draw)
  return flip(image, seed=seed)


def crop_from_uniform_draws(image, size, seed):
  """TF 2's stateless crop from ops TF 1.15 has: one int32 per dimension
  from the seed's stateless stream, modulo the room left, is the offset."""
  size = tf.convert_to_tensor(size, tf.int32)
  shape = tf.shape(image)
  offset = tf.random.stateless_uniform(
      tf.shape(shape), seed=seed, minval=0, maxval=_INT32_MAX,
      dtype=tf.int32) % (shape - size + 1)
  return tf.slice(image, offset, size)


def flip_from_uniform_draw(image, seed):
  """TF 2's stateless left-right flip from ops TF 1.15 has: flip when the
  seed's first uniform float is below 0.5."""
  draw = tf.random.stateless_uniform([], seed=seed, minval=0, maxval=1.0)
  return tf.compat.v1.cond(draw < 0.5, lambda: tf.reverse(image, [1]),
                           lambda: image)


def package_version(*names):
  """The version of the first installed distribution of `names`, or None (on
  Python 3.7 through the importlib_metadata backport)."""
  try:
    import importlib.metadata as metadata
  except ImportError:
    import importlib_metadata as metadata
  for name in names:
    try:
      return metadata.version(name)
    except metadata.PackageNotFoundError:
      pass
  return None
