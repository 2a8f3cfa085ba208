"""The optimizers behind --optimizer, in both implementations.

    v1("adam", learning_rate)      # tf.compat.v1.train: the TF1 path's, also
                                   # usable eagerly by the TF2 path
    keras("adam", learning_rate)   # what a TF2 user would pick
    keras("adam", learning_rate, adam_epsilon=1e-8)   # Keras made to match v1

They differ in ways that matter when porting (README, "TF1 vs TF2"): Keras
Adam's default epsilon is 1e-7 against v1's 1e-8, and Keras SGD with
momentum folds the learning rate into the velocity, so the two momentum
rules part ways whenever the rate changes (warm-up).
"""
import tensorflow.compat.v1 as tf

MOMENTUM = 0.9   # --optimizer=momentum: fraction of the last update kept
# The defaults each implementation ships with; they differ by a factor of 10.
V1_ADAM_EPSILON = 1e-8
KERAS_ADAM_EPSILON = 1e-7


def v1(name, learning_rate, adam_epsilon=None):
  if name == "adam":
    return tf.train.AdamOptimizer(learning_rate,
                                  epsilon=adam_epsilon or V1_ADAM_EPSILON)
  if name == "momentum":
    return tf.train.MomentumOptimizer(learning_rate, MOMENTUM)
  return tf.train.GradientDescentOptimizer(learning_rate)


def keras(name, learning_rate, adam_epsilon=None):
  import tensorflow.compat.v2 as tf2   # Keras's v2 optimizers, on TF 1.15 too
  if name == "adam":
    return tf2.keras.optimizers.Adam(learning_rate,
                                     epsilon=adam_epsilon or KERAS_ADAM_EPSILON)
  if name == "momentum":
    return tf2.keras.optimizers.SGD(learning_rate, momentum=MOMENTUM)
  return tf2.keras.optimizers.SGD(learning_rate)
