"""The one place that knows how the supported TensorFlow and Python versions
differ.

    compat.TF1                       # True on TensorFlow 1.15 (the TF1 stack)
    compat.enable_v2_behavior()      # eager + v2 APIs (a no-op on TF 2)
    compat.enable_op_determinism()   # --deterministic: deterministic kernels
    compat.stateless_random_crop(image, size, seed)
    compat.stateless_random_flip_left_right(image, seed)
    compat.crop_from_uniform_draws(image, size, seed)   # their TF 1.15
    compat.flip_from_uniform_draw(image, seed)          # stand-ins
    compat.AUTOTUNE                  # tf.data's "pick the parallelism"
    compat.estimator()               # tf.estimator (v1 API), None on 2.16+
    compat.package_version("tensorflow-cpu", "tensorflow")   # installed version

Supported: TensorFlow 1.15.5 on Python 3.7 (the legacy clusters' own
stack), TensorFlow 2.15 on Python 3.9-3.11, TensorFlow 2.16 and 2.18 on
Python 3.9-3.12, TensorFlow 2.21 on Python 3.10-3.13 (without Horovod;
docs/stacks.md). Everything else in
the project calls these and never looks at `tf.__version__` or
`sys.version_info` itself (Horovod keeps its TF-version helpers together the
same way, in horovod/tensorflow/util.py); the Keras behind tf.keras differs
on its own (model/keras_compat.py). Each helper gives the same results
on both stacks: the TF 1.15 fallbacks are built from the same stateless
random streams as the TF 2 ops they stand in for, and tests check that they
agree bit for bit (tests/unit/test_compat.py, tests/jobs/test_cross_stack.py).
"""
import os

import tensorflow as tf

TF1 = tf.version.VERSION.startswith("1.")
# tf.data.AUTOTUNE is TF 2.3+; the experimental name exists everywhere.
AUTOTUNE = tf.data.experimental.AUTOTUNE
_INT32_MAX = 2**31 - 1


def enable_v2_behavior():
  """Eager execution and the v2 APIs, for the TF2 path, predict and tests.

  TF 2 has them on already. TF 1.15 has them behind this switch, which must
  be thrown before the process builds any op (early in main); all but
  tensor equality (`==` on tensors comparing values), under which TF 1.15
  cannot hash a variable, and Horovod's DistributedGradientTape keeps its
  gradients in a dict keyed by variable.
  """
  if TF1:
    tf.compat.v1.enable_v2_behavior()
    tf.compat.v1.disable_tensor_equality()


def enable_op_determinism():
  """Deterministic kernels from here on (before any session or op runs).

  TF >= 2.8 has an API for it; TF 1.15 reads TF_DETERMINISTIC_OPS=1 when
  its kernels are created (there it covers the GPU kernels that are not
  deterministic by default; the CPU kernels this model uses already are).
  """
  enable = getattr(tf.config.experimental, "enable_op_determinism", None)
  if enable is not None:
    enable()
  else:
    os.environ["TF_DETERMINISTIC_OPS"] = "1"


def estimator():
  """tf.compat.v1.estimator (TF 1.15 to 2.15), or None: TensorFlow 2.16
  removed tf.estimator (tensorflow-estimator ends at 2.15)."""
  try:
    return tf.compat.v1.estimator
  except (AttributeError, ImportError):
    return None


def stateless_random_crop(image, size, seed):
  """A crop of `size` at a random offset that is a pure function of `seed`.

  TF 2's tf.image.stateless_random_crop where it exists, else
  crop_from_uniform_draws: the same draws, the same crops.
  """
  crop = getattr(tf.compat.v2.image, "stateless_random_crop",
                 crop_from_uniform_draws)
  return crop(image, size, seed=seed)


def stateless_random_flip_left_right(image, seed):
  """image [H, W, C] mirrored left-right or not, by a draw from `seed`.

  TF 2's op where it exists, else flip_from_uniform_draw (the same rule).
  """
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
  """The version of the first of distributions `names` that is installed,
  or None. importlib.metadata is Python 3.8+; on 3.7 its backport,
  importlib_metadata (installed with the TF 1.15 stack)."""
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
