"""Scores a trained model's latest checkpoint on the CIFAR-10 test set.

    horovodrun -np 4 python -m legacy_hvd.evaluate --model_dir=DIR [--data_dir=...]

Rank 0 restores the checkpoint and broadcasts the weights, so only rank 0
needs to see the files; every rank then scores its shard of the test set and
the counts are summed with allreduce."""
from absl import flags
from absl import logging
import horovod.tensorflow as hvd
import tensorflow.compat.v1 as tf

from flags import data as data_flags
from flags import output as output_flags
from legacy_hvd.checkpoints import resume
from legacy_hvd.common import cli
from legacy_hvd.common import results
from legacy_hvd.common.config import Config
from legacy_hvd.data import cifar10
from legacy_hvd.model import cnn
from legacy_hvd.model import scoring
from legacy_hvd.rank import devices
from legacy_hvd.rank import placement
from legacy_hvd.rank.world import Ranks

FLAGS = flags.FLAGS


def format_table(metrics):
  lines = [f"{'class':<12} accuracy"]
  for name, accuracy in zip(cifar10.CLASS_NAMES, metrics["per_class_accuracy"]):
    lines.append(f"{name:<12} " + ("-" if accuracy is None
                                   else f"{accuracy:.4f}"))
  lines.append(f"{'all':<12} {metrics['test_accuracy']:.4f} "
               f"({metrics['test_examples']} images, loss "
               f"{metrics['test_loss']:.4f})")
  return "\n".join(lines)


def evaluate(checkpoint, data, ranks):
  """Restores `checkpoint` on rank 0, scores the test set on all; metrics."""
  params = cnn.create_variables(seed=None)   # values from the checkpoint
  # Horovod: the test-set counts are summed over all ranks.
  test_set = scoring.Evaluation(
      data.test_images.shape, params, num_shards=ranks.size,
      shard_index=ranks.rank,
      sum_fn=lambda counts: hvd.allreduce(counts, op=hvd.Sum))
  # Horovod: every rank takes rank 0's restored weights.
  broadcast = hvd.broadcast_global_variables(0)
  with tf.Session(config=devices.session_config()) as session:
    session.run(tf.global_variables_initializer())
    if ranks.rank == 0:
      resume.restore_or_fail(session, list(params.values()), checkpoint)
    session.run(broadcast)
    return test_set.run(session, data.test_images, data.test_labels)


def main(argv):
  del argv
  tf.disable_v2_behavior()
  checkpoint = resume.latest_or_fail(FLAGS.model_dir)
  try:
    data = cifar10.load(FLAGS.data_dir)
  except cifar10.DataError as e:
    cli.fail(str(e))
  own_threads = placement.threads()   # pinned below; Horovod's stay free
  # Horovod: initialize, once the inputs are known to be usable.
  hvd.init()
  ranks = Ranks.of(hvd)
  # Horovod: each rank's GPU, cores and thread pools, placed as the trainer's.
  session_config = tf.ConfigProto()
  session_config.gpu_options.allow_growth = True
  session_config.gpu_options.visible_device_list = str(hvd.local_rank())
  devices.place_graph_rank(Config(), ranks, session_config, own_threads)
  metrics = evaluate(checkpoint, data, ranks)
  if ranks.rank == 0:
    metrics.update({"checkpoint": checkpoint, "data_source": data.source,
                    "world_size": ranks.size})
    logging.info("Evaluated %s on %s", checkpoint, data.source)
    print(format_table(metrics), flush=True)
    if FLAGS.results_file:
      results.write_json(FLAGS.results_file, metrics)


def run():
  """Console-script entry point (legacy-hvd-evaluate)."""
  output_flags.define_output()
  output_flags.define_results_file()
  data_flags.define_data()
  cli.run(main)


if __name__ == "__main__":
  run()
