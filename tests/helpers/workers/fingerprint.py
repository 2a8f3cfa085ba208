"""What the TF1 job computes before kernel rounding can differ, written out
so that the cross-stack tests can check it is the same on every stack.

    python tests/helpers/workers/fingerprint.py DATA_DIR OUT.npz

Writes the initial weights (seed 1234); the first batches rank 1 of 2 reads
with --augment, from the start and resumed 21 examples in; and the loss of
the initial model on the first batch.
"""
import sys

import numpy as np
import tensorflow.compat.v1 as tf

from legacy_hvd.data import cifar10
from legacy_hvd.data import pipeline
from legacy_hvd.model import cnn

SEED = 1234
BATCHES = 3
SKIP = 21        # examples a resumed run skips: 2 batches of 8, and 5


def main(data_dir, out):
  tf.disable_v2_behavior()
  data = cifar10.load(data_dir)
  arrays = {}
  with tf.Graph().as_default(), tf.Session() as session:
    params = cnn.create_variables(SEED)
    images = tf.placeholder(tf.float32, [None, 32, 32, 3])
    labels = tf.placeholder(tf.int32, [None])
    loss, _ = cnn.loss_and_accuracy(cnn.forward(images, params), labels)
    streams = {skip: tf.data.make_one_shot_iterator(pipeline.train_batches(
        data.train_images[:500], data.train_labels[:500], batch_size=8,
        num_shards=2, shard_index=1, seed=SEED, augment=True,
        skip_examples=skip)).get_next() for skip in (0, SKIP)}
    session.run(tf.global_variables_initializer())
    arrays.update(session.run(params))
    for skip, batch in streams.items():
      for i in range(BATCHES):
        arrays[f"images-{skip}-{i}"], arrays[f"labels-{skip}-{i}"] = (
            session.run(batch))
    arrays["first_loss"] = session.run(loss, {images: arrays["images-0-0"],
                                              labels: arrays["labels-0-0"]})
  np.savez(out, **arrays)


if __name__ == "__main__":
  main(*sys.argv[1:])
