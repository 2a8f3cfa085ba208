"""The CIFAR-10 CNN: conv 3x3x32 + ReLU, 2x2 max-pool, flatten, dense 10. The
initial values come from stateless random ops, so graph and eager start from
identical weights for the same seed."""
import math

import numpy as np
import tensorflow.compat.v1 as tf

IMAGE_SIZE = 32
CHANNELS = 3
NUM_CLASSES = 10
CONV_FILTERS = 32     # output channels of the 3x3 convolution
POOLED_SIZE = IMAGE_SIZE // 2

# Variable name -> shape, in creation order. Names follow the scopes below.
PARAM_SHAPES = {
    "conv1/weights": (3, 3, CHANNELS, CONV_FILTERS),
    "conv1/biases": (CONV_FILTERS,),
    "dense/weights": (POOLED_SIZE * POOLED_SIZE * CONV_FILTERS, NUM_CLASSES),
    "dense/biases": (NUM_CLASSES,),
}


def initial_value(name, seed):
  """Glorot-uniform weights and zero biases, a pure function of (name, seed):
  float32, shape PARAM_SHAPES[name]."""
  shape = PARAM_SHAPES[name]
  if name.endswith("biases"):
    return tf.zeros(shape, tf.float32)
  receptive_field = int(np.prod(shape[:-2]))   # 1 for a dense layer
  fan_in, fan_out = shape[-2] * receptive_field, shape[-1] * receptive_field
  limit = math.sqrt(6.0 / (fan_in + fan_out))
  # Each variable gets its own stream: the seed pair is (run seed, index).
  stream = list(PARAM_SHAPES).index(name)
  return tf.random.stateless_uniform(shape, seed=[seed, stream],
                                     minval=-limit, maxval=limit)


def create_variables(seed):
  """The model's variables in the current graph, by name. seed None: zeros, for
  graphs filled from a checkpoint (an export then holds no random op)."""
  params = {}
  for name, shape in PARAM_SHAPES.items():
    scope, var_name = name.split("/")
    with tf.variable_scope(scope):
      params[name] = tf.get_variable(
          var_name, shape=shape, dtype=tf.float32,
          initializer=(tf.zeros_initializer() if seed is None else
                       lambda *_, name=name, **__: initial_value(name, seed)))
  return params


def forward(images, params):
  """Unnormalized logits float32 [N, 10] for float32 images [N, 32, 32, 3]."""
  conv = tf.nn.conv2d(images, params["conv1/weights"], strides=1,
                      padding="SAME")
  conv = tf.nn.relu(conv + params["conv1/biases"])
  pool = tf.nn.max_pool2d(conv, ksize=2, strides=2, padding="VALID")
  flat = tf.reshape(pool, [-1, PARAM_SHAPES["dense/weights"][0]])
  return tf.matmul(flat, params["dense/weights"]) + params["dense/biases"]


def loss_and_accuracy(logits, labels):
  """Mean softmax cross-entropy (softmax applied here, once) and accuracy:
  float32 scalars, of logits float32 [N, 10] and labels int32 [N]."""
  loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=labels, logits=logits))
  correct = tf.equal(tf.argmax(logits, axis=1, output_type=tf.int32), labels)
  return loss, tf.reduce_mean(tf.cast(correct, tf.float32))


def weight_digest(params):
  """float64 [2 * num_vars]: each variable's sum and sum of squares. The same
  weights give bitwise the same digest, so ranks' digests tell if they agree."""
  parts = []
  for variable in params.values():
    values = tf.cast(variable, tf.float64)
    parts += [tf.reduce_sum(values), tf.reduce_sum(tf.square(values))]
  return tf.stack(parts)
