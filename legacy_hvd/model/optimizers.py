"""The optimizers behind --optimizer: tf.compat.v1.train's (v1) and Keras's.
Keras SGD with momentum folds the learning rate into the velocity, so the two
momentum rules part ways whenever the rate changes (docs/tf1-vs-tf2.md)."""
import tensorflow.compat.v1 as tf

MOMENTUM = 0.9   # --optimizer=momentum: fraction of the last update kept
# The defaults each implementation ships with (a factor of 10 apart).
V1_ADAM_EPSILON = 1e-8
KERAS_ADAM_EPSILON = 1e-7


def v1(name, learning_rate, adam_epsilon=None):
  """The tf.compat.v1.train optimizer called `name` (--optimizer)."""
  return _by_name(
      name,
      adam=lambda: tf.train.AdamOptimizer(
          learning_rate, epsilon=adam_epsilon or V1_ADAM_EPSILON),
      momentum=lambda: tf.train.MomentumOptimizer(learning_rate, MOMENTUM),
      sgd=lambda: tf.train.GradientDescentOptimizer(learning_rate))


def keras(name, learning_rate=None, adam_epsilon=None, classes=None):
  """The Keras optimizer called `name`, of `classes` (default
  tf.keras.optimizers); without `learning_rate`, Keras's default."""
  if classes is None:
    import tensorflow.compat.v2 as tf2   # pylint: disable=import-outside-toplevel
    classes = tf2.keras.optimizers
  rate = {} if learning_rate is None else {"learning_rate": learning_rate}
  return _by_name(
      name,
      adam=lambda: classes.Adam(
          epsilon=adam_epsilon or KERAS_ADAM_EPSILON, **rate),
      momentum=lambda: classes.SGD(momentum=MOMENTUM, **rate),
      sgd=lambda: classes.SGD(**rate))


def variables(optimizer):
  """The optimizer's own variables (slots, step counts): a method on v1, a
  property on Keras."""
  found = optimizer.variables
  return list(found() if callable(found) else found)


def _by_name(name, **makers):
  """The one place --optimizer's names are told apart (flags/training.py
  accepts exactly these)."""
  return makers[name]()
