"""The CIFAR-10 CNN, its loss and its optimizer as Keras objects, for fit: the
layers a TF2 user writes, computing cnn.forward from cnn.initial_value."""
import types

import tensorflow.compat.v2 as tf

from legacy_hvd.model import cnn
from legacy_hvd.model import finite_gradients
from legacy_hvd.model import keras_compat
from legacy_hvd.model import optimizers
from legacy_hvd.model import schedule


def build(seed):
  """The Keras model (float32 images [N, 32, 32, 3] -> logits [N, 10]) and
  its variables by cnn.PARAM_SHAPES name."""
  initial = lambda name: InitialValue(name, seed)
  layers = tf.keras.layers
  conv = layers.Conv2D(cnn.CONV_FILTERS, 3, padding="same",
                       activation="relu", name="conv1",
                       kernel_initializer=initial("conv1/weights"))
  dense = layers.Dense(cnn.NUM_CLASSES, name="dense",
                       kernel_initializer=initial("dense/weights"))
  net = tf.keras.Sequential([
      layers.InputLayer(input_shape=(cnn.IMAGE_SIZE, cnn.IMAGE_SIZE,
                                     cnn.CHANNELS)),
      conv, layers.MaxPool2D(2), layers.Flatten(), dense])
  params = {"conv1/weights": conv.kernel, "conv1/biases": conv.bias,
            "dense/weights": dense.kernel, "dense/biases": dense.bias}
  return net, params


class InitialValue(tf.keras.initializers.Initializer):
  """cnn.initial_value(name, seed) as a Keras initializer."""

  def __init__(self, name, seed):
    self.name, self.seed = name, seed

  def __call__(self, shape, dtype=None, **kwargs):
    del shape, dtype, kwargs   # cnn.PARAM_SHAPES[name], float32
    return cnn.initial_value(self.name, self.seed)

  def get_config(self):
    return {"name": self.name, "seed": self.seed}


def loss(labels, logits):
  """cnn.loss_and_accuracy's loss (Keras hands labels over as [N, 1])."""
  return cnn.loss_and_accuracy(logits, _flat(labels))[0]


class BatchValue(tf.keras.metrics.Metric):
  """fn(labels, logits) of the last batch alone: Keras logs the running mean
  of the epoch so far, the other paths the step's own value."""

  def __init__(self, fn, name):
    super().__init__(name=name)
    self._fn = fn
    # Each worker's own under a strategy (a metric's default sums them).
    self._value = self.add_weight(
        name="value", shape=(), initializer="zeros",
        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

  def update_state(self, labels, logits, sample_weight=None):
    del sample_weight
    return self._value.assign(self._fn(labels, logits))

  def result(self):
    return tf.identity(self._value)

  def reset_state(self):
    self._value.assign(0.0)

  reset_states = reset_state   # the name Keras of TF 1.15 calls


def batch_metrics():
  """step_loss and step_accuracy: what the other paths log each step."""
  return [BatchValue(loss, "step_loss"),
          BatchValue(lambda labels, logits: cnn.loss_and_accuracy(
              logits, _flat(labels))[1], "step_accuracy")]


def _flat(labels):
  return tf.reshape(tf.cast(labels, tf.int32), [-1])


class LearningRate(tf.keras.optimizers.schedules.LearningRateSchedule):
  """schedule.learning_rate of the optimizer's step (its `iterations`)."""

  def __init__(self, base_lr, scale, warmup_steps):
    super().__init__()
    self.base_lr, self.scale, self.warmup_steps = base_lr, scale, warmup_steps

  def __call__(self, step):
    return schedule.learning_rate(step, self.base_lr, self.scale,
                                  self.warmup_steps)

  def get_config(self):
    return {"base_lr": self.base_lr, "scale": self.scale,
            "warmup_steps": self.warmup_steps}


def make_optimizer(name, adam_epsilon=None):
  """The Keras optimizer Horovod 0.28.1 wraps, checking the gradients it
  applies. Set its learning rate once wrapped: Horovod rebuilds the optimizer
  from its config, in which a schedule class of ours would not be found."""
  keras_optimizers = keras_compat.keras_optimizers()
  checked_classes = types.SimpleNamespace(
      Adam=_checked(keras_optimizers.Adam), SGD=_checked(keras_optimizers.SGD))
  return optimizers.keras(name, adam_epsilon=adam_epsilon,
                          classes=checked_classes)


def _checked(base):
  """`base` whose apply_gradients first checks every gradient for NaN/Inf."""
  class Checked(base):

    def apply_gradients(self, grads_and_vars, *args, **kwargs):
      checked = [(finite_gradients.checked(g), v) for g, v in grads_and_vars]
      return super().apply_gradients(checked, *args, **kwargs)

  # Horovod names its wrapper after this class, as Keras saves it.
  Checked.__name__ = Checked.__qualname__ = base.__name__
  return Checked
