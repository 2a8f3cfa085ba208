"""The one place that knows how the supported stacks differ.

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
    compat.extract_tar(tar, target)  # refuses links, devices, paths outside
    compat.extract_checked(tar, target)   # its Python 3.7 stand-in
    compat.parse_checkpoint_state(text)   # a `checkpoint` state file's proto
    compat.CheckpointStateError      # what it raises for other text
    compat.checkpoint_state_text(names)   # a state file naming `names`
  Keras, for the fit variant:
    compat.keras_optimizers()        # the optimizers Horovod's Keras wraps
    compat.KERAS_COMPILE_OPTIONS     # what model.compile needs for Horovod
    compat.VARIABLE_REF              # Horovod's broadcast callback works
    compat.create_keras_optimizer_slots(optimizer, var_list)
    compat.keras_slot_index(optimizer, variable)   # its slots' position
    compat.keras_version()           # the Keras behind tf.keras
    compat.TF_KERAS_REQUIREMENT      # what to install for Keras 2 on TF 2.16+
    compat.with_tf_keras_backend(callback)   # Horovod's callback, tf.keras's

Supported: TensorFlow 1.15.5 on Python 3.7 (the legacy clusters' own
stack), TensorFlow 2.15 on Python 3.9-3.11, TensorFlow 2.16 and 2.18 on
Python 3.9-3.12, TensorFlow 2.21 on Python 3.10-3.13 (without Horovod;
docs/stacks.md). Everything else in
the project calls these and never looks at `tf.__version__` or
`sys.version_info` itself (Horovod keeps its TF-version helpers together the
same way, in horovod/tensorflow/util.py). Each helper gives the same results
on both stacks: the TF 1.15 fallbacks are built from the same stateless
random streams as the TF 2 ops they stand in for, and tests check that they
agree bit for bit (tests/unit/test_compat.py, tests/jobs/test_compat.py,
tests/jobs/test_cross_stack.py).
"""
import importlib
import os
import tarfile

from google.protobuf import text_format
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


def extract_tar(tar, target):
  """Extracts an open tarfile under `target`, refusing members that would
  land outside it, links out of it and device files: Python's 'data' filter
  where it exists (3.12, backported to 3.8.17+), else extract_checked.
  Raises tarfile.TarError on a refusal."""
  if hasattr(tarfile, "data_filter"):
    tar.extractall(target, filter="data")
  else:
    extract_checked(tar, target)


def extract_checked(tar, target):
  """extract_tar for Pythons without tarfile's filters (the TF 1.15 stack's
  3.7); stricter: regular files and directories only."""
  root = os.path.realpath(target)
  for member in tar.getmembers():
    path = os.path.realpath(os.path.join(root, member.name))
    if not (member.isfile() or member.isdir()):
      raise tarfile.TarError(f"{member.name}: not a regular file or directory")
    if os.path.isabs(member.name) or os.path.commonpath([root, path]) != root:
      raise tarfile.TarError(f"{member.name}: outside the extraction directory")
  tar.extractall(target)



# What parse_checkpoint_state raises for text that is no CheckpointState.
CheckpointStateError = text_format.ParseError


def parse_checkpoint_state(text):
  """The CheckpointState proto of a `checkpoint` state file's text, as
  tf.train.get_checkpoint_state parses it, but raising
  CheckpointStateError where that logs two warnings and returns None."""
  state = _checkpoint_state_pb2().CheckpointState()
  text_format.Merge(text, state)
  return state


def checkpoint_state_text(names):
  """A `checkpoint` state file's text naming the checkpoints `names`
  (oldest first, the last the newest), as tf.train.update_checkpoint_state
  writes it, without its deprecation warning."""
  state = _checkpoint_state_pb2().CheckpointState(
      model_checkpoint_path=names[-1], all_model_checkpoint_paths=names)
  return text_format.MessageToString(state)


def _checkpoint_state_pb2():
  # Private, and at this path from TF 1.15 to 2.21.
  from tensorflow.python.training import checkpoint_state_pb2  # pylint: disable=import-outside-toplevel
  return checkpoint_state_pb2


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
KERAS_COMPILE_OPTIONS = ({"experimental_run_tf_function": False} if TF1
                         else {})
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
