"""The limit: the trainer's graph in a bare `session.run` loop, no Horovod.

    python tools/bare_loop.py --max_steps=300 --step_log=F [--data_dir=D]
        [--batch_size=64] [--seed=1234]
    horovodrun -np 2 python tools/bare_loop.py --horovod --max_steps=300 ...

The same model (legacy_hvd/model/cnn.py), optimizer (Adam, lr 0.001) and data as
`legacy_hvd.train` at np=1, fed by the simplest pipeline a user would write
(`from_tensor_slices -> shuffle -> repeat -> batch -> normalize -> prefetch`)
and run by `while step < max_steps: session.run(train_op)` in a default
`tf.Session`: no hooks, no MonitoredTrainingSession, no checkpoints, no
summaries, no Horovod. tools/benchmark.py runs it as the `bare` case and
reports every other case as a fraction of it. Writes the same step log as
the trainers (one JSON line per step: step, time) and nothing else.

--horovod is the limit with Horovod (the `bare-np2`, `bare-np4` cases): the
same loop plus only what Horovod needs, each rank placed on its cores as the
trainer places it (legacy_hvd/rank/devices.py), its own shard of the data, the
optimizer wrapped in hvd.DistributedOptimizer, rank 0's initial variables
broadcast; rank 0 writes the step log. The gap between it and the trainer
at the same np is the trainer's own; the gap between it and `bare` is
Horovod's (and the machine's).
"""
import argparse
import json
import os
import time

import tensorflow.compat.v1 as tf

from legacy_hvd.data import cifar10
from legacy_hvd.data import pipeline
from legacy_hvd.model import cnn
from legacy_hvd.model import optimizers

BASE_LR = 0.001   # the trainer's default --lr, scaled by 1 worker


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--max_steps", type=int, required=True)
  parser.add_argument("--step_log", required=True)
  parser.add_argument("--data_dir")
  parser.add_argument("--batch_size", type=int, default=64)
  parser.add_argument("--seed", type=int, default=1234)
  parser.add_argument("--horovod", action="store_true")
  return parser.parse_args(argv)


def main(argv=None):
  args = parse_args(argv)
  tf.disable_v2_behavior()
  data = cifar10.load(args.data_dir)
  rank, size, session_config = 0, 1, None
  if args.horovod:
    # pylint: disable=import-outside-toplevel
    import horovod.tensorflow as hvd
    from legacy_hvd.rank import devices
    from legacy_hvd.rank import placement
    from legacy_hvd.common.config import Config
    from legacy_hvd.rank.world import Ranks
    own_threads = placement.threads()   # the trainer's placement: Horovod's
    hvd.init()                          # threads stay free
    ranks = Ranks.of(hvd)
    rank, size = ranks.rank, ranks.size
    session_config = tf.ConfigProto()   # the trainer's: its GPU, cores
    session_config.gpu_options.allow_growth = True
    session_config.gpu_options.visible_device_list = str(ranks.local_rank)
    devices.place_graph_rank(Config(), ranks, session_config, own_threads)
  images = tf.placeholder(tf.uint8, data.train_images.shape)
  labels = tf.placeholder(tf.int32, data.train_labels.shape)
  dataset = (tf.data.Dataset.from_tensor_slices((images, labels))
             .shard(size, rank)
             .shuffle(len(data.train_labels) // size, seed=args.seed).repeat()
             .batch(args.batch_size, drop_remainder=True)
             .map(lambda x, y: (pipeline.normalize(x), y))
             .prefetch(1))
  iterator = tf.data.make_initializable_iterator(dataset)
  batch_images, batch_labels = iterator.get_next()
  global_step = tf.train.get_or_create_global_step()
  params = cnn.create_variables(args.seed)
  loss, _ = cnn.loss_and_accuracy(cnn.forward(batch_images, params),
                                  batch_labels)
  optimizer = optimizers.v1("adam", BASE_LR * size)
  if args.horovod:
    optimizer = hvd.DistributedOptimizer(optimizer)
  train_op = optimizer.minimize(loss, global_step)
  broadcast = hvd.broadcast_global_variables(0) if args.horovod else None
  step_log = args.step_log if rank == 0 else os.devnull
  with tf.Session(config=session_config) as session, \
      open(step_log, "w") as log:
    session.run(tf.global_variables_initializer())
    if broadcast is not None:
      session.run(broadcast)
    session.run(iterator.initializer, {images: data.train_images,
                                       labels: data.train_labels})
    for step in range(1, args.max_steps + 1):
      session.run(train_op)
      log.write(json.dumps({"step": step, "time": time.time()}) + "\n")


if __name__ == "__main__":
  main()
