"""The TF2 limit: the trainer's model in a bare tf.function loop, on Horovod
or on MultiWorkerMirroredStrategy (MWMS).

    horovodrun -np 2 python -m tools.bare_loop_tf2 --strategy=horovod \\
        --max_steps=300 --step_log=F [--data_dir=D]
    python -m legacy_hvd.launch.workers -H localhost:2 -- \\
        python -m tools.bare_loop_tf2 --strategy=mwms --max_steps=300 ...

tools/bare_loop.py --horovod's twin for the eager trainers (the `floor-*`
cases of tools/benchmark.py): the same model, optimizer (v1 Adam, lr 0.001
times the workers), placement and data, fed by the simplest endless
pipeline (`from_tensor_slices -> shard -> shuffle -> repeat -> batch ->
normalize -> prefetch`), and `train_step(next(batches))` with nothing
else: no stop agreement, no NaN check, no reads of the loss. horovod: the
tape wrapped in hvd.DistributedGradientTape; mwms: the step in
strategy.run, the loss scaled to the global batch, apply_gradients summing
the gradients. The gap between it and train_tf2 or train_mwms at the same
np is the trainer's own; between its two strategies, TensorFlow's and
Horovod's. Rank 0 writes the trainers' step log (step, time) and nothing
else.
"""
import argparse
import json
import os
import time

import tensorflow.compat.v2 as tf

from legacy_hvd.common.config import Config
from legacy_hvd.data import cifar10
from legacy_hvd.data import pipeline
from legacy_hvd.model import cnn
from legacy_hvd.model import optimizers
from legacy_hvd.rank import devices
from legacy_hvd.rank import placement
from legacy_hvd.rank.world import Ranks

BASE_LR = 0.001            # the trainer's default --lr, per worker
CHIEF_LAST_SECONDS = 1     # MWMS: the others exit before the chief, whose
                           # coordination service they heartbeat to


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--max_steps", type=int, required=True)
  parser.add_argument("--step_log", required=True)
  parser.add_argument("--data_dir")
  parser.add_argument("--batch_size", type=int, default=64)
  parser.add_argument("--seed", type=int, default=1234)
  parser.add_argument("--strategy", choices=["horovod", "mwms"],
                      required=True)
  return parser.parse_args(argv)


def batches(data, size, rank, args):
  return (tf.data.Dataset.from_tensor_slices((data.train_images,
                                              data.train_labels))
          .shard(size, rank)
          .shuffle(len(data.train_labels) // size, seed=args.seed).repeat()
          .batch(args.batch_size, drop_remainder=True)
          .map(lambda x, y: (pipeline.normalize(x), y))
          .prefetch(1))


def main(argv=None):
  args = parse_args(argv)
  data = cifar10.load(args.data_dir)
  own_threads = placement.threads()   # before hvd.init, as the trainers
  if args.strategy == "horovod":
    import horovod.tensorflow as hvd  # pylint: disable=import-outside-toplevel
    hvd.init()
    ranks = Ranks.of(hvd)
  else:
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    ranks = Ranks.of_workers(resolver.cluster_spec().as_dict()["worker"],
                             resolver.task_id)
  devices.place_eager_rank(Config(), ranks, own_threads)
  if args.strategy == "horovod":
    step = horovod_step(hvd, data, ranks, args)
  else:
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        cluster_resolver=resolver)
    step = mwms_step(strategy, data, args)
  with open(args.step_log if ranks.rank == 0 else os.devnull, "w") as log:
    for number in range(1, args.max_steps + 1):
      step(number == 1)
      log.write(json.dumps({"step": number, "time": time.time()}) + "\n")
  if args.strategy == "mwms":
    strategy.run(lambda: tf.distribute.get_replica_context().all_reduce(
        "sum", tf.constant(0.0)))   # all done stepping
    if ranks.rank == 0:
      time.sleep(CHIEF_LAST_SECONDS)


def horovod_step(hvd, data, ranks, args):
  params = {name: tf.Variable(cnn.initial_value(name, args.seed), name=name)
            for name in cnn.PARAM_SHAPES}
  trainable = list(params.values())
  optimizer = optimizers.v1("adam", BASE_LR * ranks.size)
  hvd.broadcast_variables(trainable, root_rank=0)

  @tf.function
  def train_step(images, labels, first):
    with tf.GradientTape() as tape:
      loss, _ = cnn.loss_and_accuracy(cnn.forward(images, params), labels)
    tape = hvd.DistributedGradientTape(tape)
    optimizer.apply_gradients(zip(tape.gradient(loss, trainable), trainable))
    if first:   # the optimizer's slots exist now
      hvd.broadcast_variables(trainable + optimizer.variables(), root_rank=0)

  iterator = iter(batches(data, ranks.size, ranks.rank, args))
  return lambda first: train_step(*next(iterator), first)


def mwms_replica_step(strategy, params, optimizer):
  """One replica's step on MWMS: the loss scaled to the global batch,
  apply_gradients summing the replicas' gradients."""
  trainable = list(params.values())

  def replica_step(images, labels):
    with tf.GradientTape() as tape:
      loss, _ = cnn.loss_and_accuracy(cnn.forward(images, params), labels)
      scaled = loss / strategy.num_replicas_in_sync
    optimizer.apply_gradients(zip(tape.gradient(scaled, trainable),
                                  trainable))
  return replica_step


def mwms_step(strategy, data, args):
  with strategy.scope():
    params = {name: tf.Variable(cnn.initial_value(name, args.seed),
                                name=name) for name in cnn.PARAM_SHAPES}
    optimizer = optimizers.v1("adam", BASE_LR * strategy.num_replicas_in_sync)
  replica_step = mwms_replica_step(strategy, params, optimizer)

  @tf.function
  def train_step(images, labels):
    strategy.run(replica_step, args=(images, labels))

  iterator = iter(strategy.distribute_datasets_from_function(
      lambda context: batches(data, context.num_input_pipelines,
                              context.input_pipeline_id, args)))
  return lambda first: train_step(*next(iterator))


if __name__ == "__main__":
  main()
