"""How the Keras behind tf.keras differs across the supported stacks:
keras_compat.keras_optimizers, keras_compat.KERAS_COMPILE_OPTIONS,
keras_compat.VARIABLE_REF, keras_compat.create_keras_optimizer_slots,
keras_compat.keras_slot_index, keras_compat.apply_summed_gradients,
keras_compat.keras_version, keras_compat.TF_KERAS_REQUIREMENT,
keras_compat.with_tf_keras_backend.

tf.keras is Keras 2.2.4-tf on TF 1.15, Keras 2 up to TF 2.15, Keras 3 or
tf_keras after; Horovod 0.28.1's Keras integration needs Keras 2, and an
optimizer's slots are reached through private methods that differ."""
import importlib
import inspect

import tensorflow as tf

from legacy_hvd.common import compat


def keras_optimizers():
  """The optimizers Horovod 0.28.1's Keras wraps: `tf.keras.optimizers.legacy`
  on Keras 2.11+ (the new ones take another gradient path), else the plain."""
  optimizers = tf.compat.v2.keras.optimizers
  return getattr(optimizers, "legacy", optimizers)


# model.compile for Horovod's DistributedOptimizer: TF 1.15's v2 behaviour
# needs Keras's graph-mode step, where Horovod computes the gradients.
KERAS_COMPILE_OPTIONS = ({"experimental_run_tf_function": False}
                         if compat.TF1 else {})
# Variable.ref() (TF 2): Horovod's Keras BroadcastGlobalVariablesCallback
# calls it when executing eagerly; TF 1.15 lacks it.
VARIABLE_REF = hasattr(tf.Variable, "ref")


def create_keras_optimizer_slots(optimizer, var_list):
  """Creates a Keras (legacy) optimizer's step, hyper-parameters and slots now,
  as its first apply_gradients would. Restored later, a checkpoint fills them
  in place; restored first, it creates them in another order than a rank that
  restored nothing, and Horovod's broadcasts pair variables by position."""
  create_all = getattr(optimizer, "_create_all_weights", None)
  if create_all is not None:
    create_all(var_list)
  else:
    optimizer.iterations   # pylint: disable=pointless-statement
    optimizer._create_hypers()   # pylint: disable=protected-access
    optimizer._create_slots(var_list)   # pylint: disable=protected-access


def keras_slot_index(optimizer, variable):
  """The position of `variable`'s slots in a built new Keras optimizer's slot
  lists: Keras 2.11-2.15 and tf_keras index by variable key, Keras 3 by the
  variable."""
  index_of = getattr(optimizer, "_get_variable_index", None)   # Keras 3
  if index_of is not None:
    return index_of(variable)
  return optimizer._index_dict[optimizer._var_key(variable)]   # pylint: disable=protected-access


def apply_summed_gradients(optimizer, grads_and_vars):
  """Applies gradients already summed over the replicas, in a replica, without
  the optimizer's own sum: Keras 3 has no switch (keras-team/keras#19308)."""
  if "skip_gradients_aggregation" in inspect.signature(
      optimizer.apply_gradients).parameters:
    return optimizer.apply_gradients(grads_and_vars,
                                     skip_gradients_aggregation=True)
  if not hasattr(optimizer, "_all_reduce_sum_gradients"):
    raise NotImplementedError(f"no way to skip {type(optimizer)}'s own sum")
  optimizer._all_reduce_sum_gradients = lambda pairs: pairs   # pylint: disable=protected-access
  try:
    return optimizer.apply_gradients(grads_and_vars)
  finally:
    del optimizer._all_reduce_sum_gradients   # pylint: disable=protected-access


def keras_version():
  """The version of the Keras behind tf.keras ('2.2.4-tf' on TF 1.15; on 2.16+
  '3.x', or tf_keras's when TF_USE_LEGACY_KERAS=1 was set before import)."""
  keras = tf.compat.v2.keras
  version = getattr(keras, "__version__", None)   # Keras 3, TF 1.15
  if version is None:   # Keras 2 as a package: keras (TF 2.6-2.15), tf_keras
    package = keras.layers.Layer.__module__.split(".")[0]
    version = importlib.import_module(package).__version__
  return version


# Keras 2 behind tf.keras on TF >= 2.16 (install with --no-deps: it requires
# `tensorflow`, which would install beside `tensorflow-cpu`).
TF_KERAS_REQUIREMENT = "tf_keras=={}.*".format(
    ".".join(tf.version.VERSION.split(".")[:2]))


def with_tf_keras_backend(callback):
  """A horovod.tensorflow.keras callback, made to use tf.keras's backend: on TF
  2.16+ Horovod 0.28.1 gives it Keras 3's even under tf_keras, which lacks
  the `backend.constant` MetricAverageCallback calls."""
  if not hasattr(callback.backend, "constant"):
    callback.backend = tf.compat.v2.keras.backend
  return callback
