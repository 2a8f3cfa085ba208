"""Exports a trained model's latest checkpoint for serving.

    python -m legacy_hvd.export --model_dir=DIR --out=OUT [--format=saved_model|frozen_graph]

A SavedModel (TF Serving, TF2) or one frozen GraphDef (TF1; tensors
"images:0", "classes:0", "probabilities:0"): uint8 RGB images [N, 32, 32, 3]
in, classes int64 [N] and probabilities float32 [N, 10] out, normalization
inside. OUT is renamed into place: complete or absent."""
import os
import shutil
import tempfile

from absl import flags
import tensorflow.compat.v1 as tf

from flags import output as output_flags
from flags import serving as serving_flags
from legacy_hvd.checkpoints import resume
from legacy_hvd.common import cli
from legacy_hvd.data import pipeline
from legacy_hvd.faults import failed_writes
from legacy_hvd.model import cnn

FLAGS = flags.FLAGS
SIGNATURE = "serving_default"
OUTPUT_NODES = ("classes", "probabilities")


def build_serving_graph():
  """Serving tensors in the default graph: (images, classes, probabilities)."""
  images = tf.placeholder(tf.uint8, [None, cnn.IMAGE_SIZE, cnn.IMAGE_SIZE,
                                     cnn.CHANNELS], name="images")
  params = cnn.create_variables(seed=None)   # values from the checkpoint
  logits = cnn.forward(pipeline.normalize(images), params)
  classes = tf.argmax(logits, axis=1, name="classes")
  probabilities = tf.nn.softmax(logits, name="probabilities")
  return images, classes, probabilities, params


def export(checkpoint, out, export_format):
  """Writes the export to a temporary path, then renames it to `out`."""
  parent = os.path.dirname(os.path.abspath(out))
  work = tempfile.mkdtemp(prefix=".export-", dir=parent)
  try:
    staged = os.path.join(work, "export")
    with tf.Graph().as_default(), tf.Session() as session:
      images, classes, probabilities, params = build_serving_graph()
      resume.restore_or_fail(session, list(params.values()),
                             checkpoint)
      if export_format == "saved_model":
        builder = tf.saved_model.Builder(staged)
        signature = tf.saved_model.predict_signature_def(
            inputs={"images": images},
            outputs={"classes": classes, "probabilities": probabilities})
        # Attributes at their defaults are left out, so that an older
        # TensorFlow (1.15) reads an export of a newer one.
        builder.add_meta_graph_and_variables(
            session, [tf.saved_model.SERVING],
            signature_def_map={SIGNATURE: signature},
            strip_default_attrs=True)
        builder.save()
      else:
        frozen = tf.graph_util.convert_variables_to_constants(
            session, session.graph.as_graph_def(), list(OUTPUT_NODES))
        # As for the SavedModel: no attributes at their defaults.
        frozen = tf.train.export_meta_graph(
            graph_def=frozen, strip_default_attrs=True).graph_def
        with open(staged, "wb") as f:
          f.write(frozen.SerializeToString())
    os.rename(staged, out)
  finally:
    shutil.rmtree(work, ignore_errors=True)
  return out


def main(argv):
  del argv
  tf.disable_v2_behavior()
  checkpoint = resume.latest_or_fail(FLAGS.model_dir)
  if os.path.exists(FLAGS.out):
    cli.fail(f"--out={FLAGS.out}: already exists; expected a new path "
             "(an export is never overwritten)")
  if not os.path.isdir(os.path.dirname(os.path.abspath(FLAGS.out))):
    cli.fail(f"--out={FLAGS.out}: its parent directory does not exist")
  # A full disk or a read-only OUT: one line, no traceback.
  with failed_writes.end_on_failure(model_dir=None, target=FLAGS.out):
    print(export(checkpoint, FLAGS.out, FLAGS.format))


def run():
  """Console-script entry point (legacy-hvd-export)."""
  output_flags.define_output()
  serving_flags.define_export()
  cli.run(main)


if __name__ == "__main__":
  run()
