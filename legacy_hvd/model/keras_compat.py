"""The one place that knows how the Keras behind tf.keras differs across the
supported stacks, for the fit variant and the checkpoints it shares.

    keras_compat.keras_optimizers()      # what Horovod's Keras wraps
    keras_compat.KERAS_COMPILE_OPTIONS   # what model.compile needs for Horovod
    keras_compat.VARIABLE_REF            # Horovod's broadcast callback works
    keras_compat.create_keras_optimizer_slots(optimizer, var_list)
    keras_compat.keras_slot_index(optimizer, variable)   # its slots' position
    keras_compat.keras_version()         # the Keras behind tf.keras
    keras_compat.TF_KERAS_REQUIREMENT    # Keras 2 to install on TF 2.16+
    keras_compat.with_tf_keras_backend(callback)   # tf.keras's backend

tf.keras is Keras 2.2.4-tf on TF 1.15, Keras 2 up to TF 2.15, Keras 3 or
tf_keras after; Horovod 0.28.1's Keras integration needs Keras 2, and an
optimizer's slots are reached through private methods that differ between
them. tests/jobs/test_compat.py checks the Keras each stack gives the fit
variant.
"""
import importlib

import tensorflow as tf

from legacy_hvd.common import compat


def keras_optimizers():
  """The Keras optimizers Horovod 0.28.1's Keras integration wraps: on
  Keras 2.11+ `tf.keras.optimizers.legacy` (the new ones have another
  gradient path), before that `tf.keras.optimizers` (the same classes)."""
  optimizers = tf.compat.v2.keras.optimizers
  return getattr(optimizers, "legacy", optimizers)


# What model.compile needs for Horovod's DistributedOptimizer: TF 2.0-2.1
# and TF 1.15's v2 behaviour need Keras's graph-mode step, where Horovod
# computes the gradients (`experimental_run_tf_function=False`); later Keras
# has no such option.
KERAS_COMPILE_OPTIONS = ({"experimental_run_tf_function": False}
                         if compat.TF1 else {})
# Variable.ref() (TF 2): Horovod's Keras BroadcastGlobalVariablesCallback
# calls it when executing eagerly; TF 1.15 lacks it.
VARIABLE_REF = hasattr(tf.Variable, "ref")


def create_keras_optimizer_slots(optimizer, var_list):
  """Creates a Keras (legacy) optimizer's step, hyper-parameters and slots
  now, as its first apply_gradients would. A checkpoint restored afterwards
  fills them in place; restored before, it creates them itself, in another
  order than a rank that restored nothing, and Horovod's broadcasts pair
  variables by position. Private methods: Keras 2.11+'s legacy optimizers
  have _create_all_weights, TF 1.15's the parts of it."""
  create_all = getattr(optimizer, "_create_all_weights", None)
  if create_all is not None:
    create_all(var_list)
  else:
    optimizer.iterations   # pylint: disable=pointless-statement
    optimizer._create_hypers()   # pylint: disable=protected-access
    optimizer._create_slots(var_list)   # pylint: disable=protected-access


def keras_slot_index(optimizer, variable):
  """The position of `variable`'s slots in a built new Keras optimizer's
  slot lists (`momentums`, `_momentums`, `_velocities`). Private methods:
  Keras 2.11-2.15 and tf_keras keep an index by variable key, Keras 3 (tf.keras
  on TF >= 2.16) looks it up by the variable itself."""
  index_of = getattr(optimizer, "_get_variable_index", None)   # Keras 3
  if index_of is not None:
    return index_of(variable)
  return optimizer._index_dict[optimizer._var_key(variable)]   # pylint: disable=protected-access


def keras_version():
  """The version of the Keras behind tf.keras: '2.15.0'; '2.2.4-tf' on TF
  1.15; on TF >= 2.16 '3.x', or tf_keras's '2.16.0' when
  TF_USE_LEGACY_KERAS=1 was set before TensorFlow was imported."""
  keras = tf.compat.v2.keras
  version = getattr(keras, "__version__", None)   # Keras 3, TF 1.15
  if version is None:   # Keras 2 as a package: keras (TF 2.6-2.15), tf_keras
    package = keras.layers.Layer.__module__.split(".")[0]
    version = importlib.import_module(package).__version__
  return version


# What to install on TF >= 2.16 for Keras 2 behind tf.keras: tf_keras of
# TensorFlow's minor version (--no-deps: it requires `tensorflow`, which
# would install beside `tensorflow-cpu`).
TF_KERAS_REQUIREMENT = "tf_keras=={}.*".format(
    ".".join(tf.version.VERSION.split(".")[:2]))


def with_tf_keras_backend(callback):
  """A horovod.tensorflow.keras callback, made to use tf.keras's backend.

  Horovod 0.28.1 gives its callbacks `keras.backend`: on TF >= 2.16 that is
  Keras 3's even when tf.keras is tf_keras, and lacks what
  MetricAverageCallback calls (`backend.constant`). Elsewhere Horovod's is
  tf.keras's own, and the callback is returned as it is.
  """
  if not hasattr(callback.backend, "constant"):
    callback.backend = tf.compat.v2.keras.backend
  return callback
