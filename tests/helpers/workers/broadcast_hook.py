"""Run under horovodrun: the project's broadcast hook makes rank 0's values win.

Each rank starts `v` at its own rank number and a MonitoredSession with
legacy_hvd.training.hooks._BroadcastGlobalVariablesHook(0) (the stand-in used where
Horovod lacks its own hook, TF >= 2.16); each rank writes what it then sees.
"""
import json
import os
import sys

import horovod.tensorflow as hvd
import tensorflow.compat.v1 as tf

from legacy_hvd.training import hooks


def main(out_dir):
  tf.disable_v2_behavior()
  hvd.init()
  v = tf.get_variable("v", initializer=tf.fill([3], float(hvd.rank() + 7)))
  with tf.train.MonitoredSession(
      hooks=[hooks._BroadcastGlobalVariablesHook(0)]) as session:
    seen = session.run(v).tolist()
  with open(os.path.join(out_dir, f"rank-{hvd.rank()}.json"), "w") as f:
    json.dump({"v": seen, "horovod_has_hook":
               hasattr(hvd, "BroadcastGlobalVariablesHook")}, f)


if __name__ == "__main__":
  main(sys.argv[1])
