"""Classifies image files with a model exported by legacy_hvd.export.

    python -m legacy_hvd.predict --model=OUT image.png [image.jpg ...]

Prints one line per image: its path, then the --top_k classes with their
probabilities, most probable first. PNG and JPEG are decoded to RGB; images
that are not 32x32 are resized to it (CIFAR-10's size), and the line says so."""
import os

from absl import flags
import numpy as np
# The TF2 API on TF 2 and on TF 1.15 alike (with compat.enable_v2_behavior).
import tensorflow.compat.v2 as tf

from flags import serving as serving_flags
from legacy_hvd.common import cli
from legacy_hvd.common import compat
from legacy_hvd.data import cifar10
from legacy_hvd.model import cnn

FLAGS = flags.FLAGS
SIZE = (cnn.IMAGE_SIZE, cnn.IMAGE_SIZE)


def load_classifier(path):
  """Returns fn(uint8 [N, 32, 32, 3]) -> (classes [N], probabilities [N, 10])."""
  if os.path.isdir(path):
    try:
      serve = tf.saved_model.load(path).signatures["serving_default"]
    except (OSError, ValueError, KeyError) as e:
      cli.fail(f"--model={path}: not a SavedModel from legacy_hvd.export ({e})")

    def classify(images):
      outputs = serve(images=tf.constant(images))
      return outputs["classes"], outputs["probabilities"]
    return classify
  if not os.path.isfile(path):
    cli.fail(f"--model={path}: no such file or directory; expected an export "
             "of legacy_hvd.export")
  graph_def = tf.compat.v1.GraphDef()
  try:
    with open(path, "rb") as f:
      graph_def.ParseFromString(f.read())
    frozen = tf.compat.v1.wrap_function(
        lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    serve = frozen.prune("images:0", ["classes:0", "probabilities:0"])
  except Exception as e:  # protobuf and graph import raise many types
    cli.fail(f"--model={path}: not a frozen graph from legacy_hvd.export "
             f"({type(e).__name__})")
  return lambda images: serve(tf.constant(images))


def read_image(path):
  """uint8 [32, 32, 3] and whether it had to be resized."""
  try:
    image = tf.io.decode_image(tf.io.read_file(path), channels=3,
                               expand_animations=False)
  except (tf.errors.InvalidArgumentError, tf.errors.NotFoundError) as e:
    cli.fail(f"{path}: not a readable PNG or JPEG image "
             f"({e.message.splitlines()[0]})")
  resized = tuple(image.shape[:2]) != SIZE
  if resized:
    image = tf.cast(tf.clip_by_value(tf.round(tf.image.resize(image, SIZE)),
                                     0, 255), tf.uint8)
  return image.numpy(), resized


def main(argv):
  compat.enable_v2_behavior()   # eager: TF 1.15 starts in graph mode
  paths = argv[1:]
  if not paths:
    cli.fail("expected one or more image files after the flags",
             cli.USAGE_ERROR)
  images, resized = zip(*(read_image(p) for p in paths))
  classify = load_classifier(FLAGS.model)
  _, probabilities = classify(np.stack(images))
  for path, was_resized, row in zip(paths, resized, probabilities.numpy()):
    best = np.argsort(-row)[:FLAGS.top_k]
    ranked = ", ".join(f"{cifar10.CLASS_NAMES[i]} {row[i]:.3f}" for i in best)
    note = " (resized to 32x32)" if was_resized else ""
    print(f"{path}: {ranked}{note}")


def run():
  """Console-script entry point (legacy-hvd-predict)."""
  serving_flags.define_predict()
  cli.run(main, positional_args=True)


if __name__ == "__main__":
  run()
