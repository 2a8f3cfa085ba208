"""The CNN: shapes, variable names, and identical initial values everywhere."""
import numpy as np
import tensorflow as tf2
import tensorflow.compat.v1 as tf

from legacy_hvd.model import cnn


def build_graph(seed, batch=5):
  graph = tf.Graph()
  with graph.as_default():
    images = tf.placeholder(tf.float32, [batch, 32, 32, 3])
    params = cnn.create_variables(seed)
    logits = cnn.forward(images, params)
  return graph, images, params, logits


def initial_values(seed):
  graph, _, params, _ = build_graph(seed)
  with tf.Session(graph=graph) as session:
    session.run(tf.variables_initializer(list(params.values())))
    return session.run(params)


def test_logits_shape_and_variable_names():
  graph, images, params, logits = build_graph(seed=1)
  assert logits.shape.as_list() == [5, 10]
  with graph.as_default():
    names = sorted(v.op.name for v in tf.global_variables())
  assert names == ["conv1/biases", "conv1/weights", "dense/biases",
                   "dense/weights"]
  assert {n: tuple(p.shape.as_list()) for n, p in params.items()} == {
      "conv1/weights": (3, 3, 3, 32), "conv1/biases": (32,),
      "dense/weights": (16 * 16 * 32, 10), "dense/biases": (10,)}


def test_initial_values_depend_only_on_seed_and_match_eager():
  first, again, other = initial_values(7), initial_values(7), initial_values(8)
  for name in cnn.PARAM_SHAPES:
    np.testing.assert_array_equal(first[name], again[name])
    # The TF2 path creates its variables eagerly from the same function.
    np.testing.assert_array_equal(first[name],
                                  cnn.initial_value(name, 7).numpy())
  assert not np.array_equal(first["dense/weights"], other["dense/weights"])
  assert not first["conv1/biases"].any()
  limit = np.sqrt(6.0 / (27 + 288))   # Glorot: fan_in 3*3*3, fan_out 3*3*32
  assert 0.9 * limit < np.abs(first["conv1/weights"]).max() <= limit


def test_forward_matches_numpy_reference():
  rng = np.random.RandomState(0)
  images = rng.randn(2, 32, 32, 3).astype(np.float32)
  params = {n: rng.randn(*s).astype(np.float32) * 0.1
            for n, s in cnn.PARAM_SHAPES.items()}
  logits = cnn.forward(tf2.constant(images),
                       {n: tf2.constant(v) for n, v in params.items()})
  # Direct convolution with SAME zero padding, ReLU, 2x2 max-pool, dense.
  padded = np.pad(images, [(0, 0), (1, 1), (1, 1), (0, 0)])
  conv = np.zeros((2, 32, 32, 32), np.float64)
  for dy in range(3):
    for dx in range(3):
      conv += padded[:, dy:dy + 32, dx:dx + 32, :] @ params["conv1/weights"][dy, dx]
  conv = np.maximum(conv + params["conv1/biases"], 0)
  pooled = conv.reshape(2, 16, 2, 16, 2, 32).max(axis=(2, 4))
  expected = pooled.reshape(2, -1) @ params["dense/weights"] + params["dense/biases"]
  np.testing.assert_allclose(logits.numpy(), expected, rtol=1e-4, atol=1e-4)


def test_loss_applies_softmax_once():
  logits = tf2.constant([[2.0, 0.0, 0.0, 0, 0, 0, 0, 0, 0, 0]])
  loss, accuracy = cnn.loss_and_accuracy(logits, tf2.constant([0]))
  expected = -np.log(np.exp(2.0) / (np.exp(2.0) + 9))
  np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-6)
  assert accuracy.numpy() == 1.0
