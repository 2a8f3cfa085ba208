"""Run under horovodrun: one SGD step whose averaged gradient is known exactly.

Rank r minimizes loss_r(w) = (r + 1) * <x, w> with x = [1, 2, 4], so its own
gradient is (r + 1) * x. hvd.DistributedOptimizer must apply the mean over
ranks: with lr = 1 and w0 = 0, w1 = -mean(r + 1) * x. Each rank writes its w1
as JSON to argv[1]/rank-<r>.json.
"""
import json
import os
import sys

import horovod.tensorflow as hvd
import tensorflow.compat.v1 as tf


def main(out_dir):
  tf.disable_v2_behavior()
  hvd.init()
  x = tf.constant([1.0, 2.0, 4.0])
  w = tf.get_variable("w", initializer=tf.zeros([3]))
  loss = (hvd.rank() + 1.0) * tf.reduce_sum(x * w)
  optimizer = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(1.0))
  train_op = optimizer.minimize(loss)
  with tf.Session() as session:
    session.run(tf.global_variables_initializer())
    session.run(train_op)
    w1 = session.run(w).tolist()
  with open(os.path.join(out_dir, f"rank-{hvd.rank()}.json"), "w") as f:
    json.dump({"rank": hvd.rank(), "size": hvd.size(), "w": w1}, f)


if __name__ == "__main__":
  main(sys.argv[1])
