"""The TF2 loop on TensorFlow's own multi-worker training, without Horovod:
tf.distribute.MultiWorkerMirroredStrategy (MWMS).

    python -m legacy_hvd.launch.workers -np 4 -H localhost:4 -- \\
        python -m legacy_hvd.train_mwms --batch_size=64
    TF_CONFIG='{"cluster": {"worker": ["lh1:23456", "lh2:23456"]},
                "task": {"type": "worker", "index": 0}}' \\
        python -m legacy_hvd.train_mwms ...     # on each host, its index

The way past Horovod: Horovod 0.28.1, its last release, does not build
against TensorFlow >= 2.20; this trainer runs on the newest TensorFlow too.
Same flags, data and shards, model (same variables and initial values for
the same --seed), learning-rate scaling and warm-up, step log, results.json,
world.json and TF2 checkpoints as legacy_hvd.train_tf2, so the two compare
step by step (tools/compare_paths.py) and each resumes the other's model
directory (and the TF1 job's, converted).

Read beside legacy_hvd/train_tf2.py: `grep -n "tf.distribute:"` lists every
distributed touch point, in order; docs/tf1-vs-tf2.md's "Past Horovod" says
what differs from Horovod. The runtime is the Horovod loop's
(legacy_hvd/training/eager_job.py), its collectives the strategy's.
"""

from absl import flags
# The TF2 API (this trainer needs TensorFlow 2).
import tensorflow.compat.v2 as tf

from flags import define_trainer_flags
from flags import mwms as mwms_flags
from legacy_hvd.checkpoints import object_checkpoints
from legacy_hvd.common import cli
from legacy_hvd.common import compat
from legacy_hvd.common.config import Config
from legacy_hvd.common.signals import StopSignals
from legacy_hvd.model import cnn
from legacy_hvd.model import finite_gradients
from legacy_hvd.model import keras_compat
from legacy_hvd.model import optimizers
from legacy_hvd.rank import cluster
from legacy_hvd.rank import devices
from legacy_hvd.rank import startup
from legacy_hvd.collectives import strategy_collectives
from legacy_hvd.rank.world import Ranks
from legacy_hvd.training import eager_job
from legacy_hvd.training import job

SUM = tf.distribute.ReduceOp.SUM


def main(argv):
  del argv
  compat.enable_v2_behavior()
  config = Config.from_flags(flags.FLAGS)
  stop_signals = StopSignals().install()
  data, own_threads = startup.before_horovod(config)
  gpus = tf.config.list_physical_devices("GPU")
  resolver = cluster.cluster_resolver(len(gpus))
  workers = resolver.cluster_spec().as_dict().get("worker", ["localhost:0"])
  ranks = Ranks.of_workers(workers, resolver.task_id or 0)
  # tf.distribute: MWMS takes every GPU a worker sees: one each, the one
  # numbered by its place on its host, as under Horovod.
  gpu = devices.local_gpu(config, ranks)   # None: a host without GPUs
  if gpu:
    tf.config.experimental.set_memory_growth(gpu, True)
    tf.config.set_visible_devices(gpu, "GPU")
  devices.place_eager_rank(config, ranks, own_threads)
  # tf.distribute: one replica per worker, its collectives over gRPC (NCCL
  # on a GPU: AUTO is TensorFlow's ring); a peer silent for longer than
  # --collective_timeout fails the step, else a dead one hangs the rest.
  implementation = tf.distribute.experimental.CommunicationImplementation
  with cluster.ending_if_the_cluster_fails(workers, ranks.rank):
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        cluster_resolver=resolver,
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=implementation.NCCL if gpu else implementation.AUTO,
            timeout_seconds=config.collective_timeout))
  # TensorFlow's pre-emption notifier took SIGTERM for itself: it is the
  # job's stop signal again (an agreed step, a checkpoint), one it took too.
  cluster.take_back_sigterm(stop_signals)
  collectives = strategy_collectives.Collectives(strategy, ranks.rank)
  with eager_job.start(config, data, ranks, stop_signals,
                       f"MWMS loop ({config.optimizer_impl} optimizer)",
                       collectives) as runtime:
    train(config, data, ranks, runtime, strategy, collectives)
    # tf.distribute: the final scores on every worker; the chief (rank 0)
    # alone writes results.json.
    runtime.finish("mwms")


def train(config, data, ranks, runtime, strategy, collectives):
  """Trains eagerly under `strategy` through the runtime's loop. A stop
  signal ends the process there, once rank 0 saved the step where all
  ranks stopped."""
  plan = runtime.plan
  # tf.distribute: variables made in the strategy's scope are mirrored:
  # one copy per replica, updated together.
  with strategy.scope():
    params = {name: tf.Variable(cnn.initial_value(name, config.seed),
                                name=name)
              for name in cnn.PARAM_SHAPES}
    step = tf.Variable(0, dtype=tf.int64, trainable=False,
                       name="global_step",
                       aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    # tf.distribute: the learning rate scaled with the number of workers
    # (times their number for --lr_scaling=linear), reached by a warm-up.
    lr_schedule = plan.lr_schedule   # job.Plan: the scale of ranks.size
    make_optimizer = getattr(optimizers, config.optimizer_impl)
    optimizer = make_optimizer(config.optimizer,
                               lambda: lr_schedule.rate(step),
                               config.adam_epsilon)
  trainable = list(params.values())
  # tf.distribute: a variable made inside strategy.run (an optimizer's slot,
  # in the first step) is made by every worker alike; restoring it there on
  # the chief alone would be a collective the others never join. Resuming,
  # every worker makes its optimizer's state first, by applying zero
  # gradients (the chief's restore overwrites it all).
  if collectives.broadcast_from_rank0(
      int(tf.train.latest_checkpoint(config.model_dir) is not None)):
    strategy.run(lambda: optimizer.apply_gradients(
        [(tf.zeros_like(v), v) for v in trainable]))
  # tf.distribute: only the chief writes checkpoints, and resumes from its
  # newest; the others take its values below.
  checkpoints = (object_checkpoints.restore_newest(
      config.model_dir, step, optimizer, params, lr_schedule)
                 if ranks.rank == 0 else None)
  # tf.distribute: every worker starts from the chief's weights, step and
  # optimizer state (MWMS makes the initial values the chief's; a restored
  # checkpoint is the chief's alone).
  collectives.broadcast_variables(trainable + [step] +
                                  optimizers.variables(optimizer))

  def replica_step(images, labels, stop_requested):
    with tf.GradientTape() as tape:
      loss, accuracy = cnn.loss_and_accuracy(cnn.forward(images, params),
                                             labels)
      # tf.distribute: the replicas' gradients are summed (Horovod averages
      # them): each replica's loss is scaled to its share of the global
      # batch, so the sum is the global batch's mean.
      scaled_loss = loss / strategy.num_replicas_in_sync
    gradients = tape.gradient(scaled_loss, trainable)
    # tf.distribute: one all-reduce a step: the gradients' sum and, in the
    # same pack, the stop requests' (one float per stop signal), made in
    # the replica: an argument has no device to reduce to.
    *gradients, any_stop = tf.distribute.get_replica_context().all_reduce(
        SUM, gradients + [tf.identity(stop_requested)])
    # Alike on every replica: a NaN or Inf anywhere fails every replica's
    # check in the same step, before anything is applied.
    gradients = [finite_gradients.checked(g) for g in gradients]
    rate = lr_schedule.rate(step)
    # tf.distribute: applied as summed, without the optimizer's all-reduce.
    if config.optimizer_impl == "v1":
      optimizer.apply_gradients(zip(gradients, trainable), global_step=step,
                                skip_gradients_aggregation=True)
    else:
      keras_compat.apply_summed_gradients(optimizer,
                                          zip(gradients, trainable))
      step.assign_add(1)
    return loss, accuracy, rate, any_stop

  @tf.function
  def train_step(images, labels, stop_requested):
    # tf.distribute: the step runs in every replica; each returns its own.
    results = strategy.run(replica_step,
                           args=(images, labels, stop_requested))
    return [strategy.experimental_local_results(r)[0] for r in results]

  start = int(step.numpy())
  # tf.distribute: each worker reads its own shard of the training set
  # (input pipeline i of n is worker i's; no auto-sharding), in the same
  # order as the Horovod jobs.
  dataset = strategy.distribute_datasets_from_function(
      lambda context: job.batches(
          config, data.train_images, data.train_labels,
          context.num_input_pipelines, context.input_pipeline_id,
          start * config.batch_size))
  # (No first step's broadcast: every worker took the chief's state above.)
  runtime.steps(
      lambda images, labels, first_step, stop_requested: train_step(
          images, labels, stop_requested),
      dataset, step, params, checkpoints)


def run():
  """Console-script entry point (legacy-hvd-train-mwms)."""
  cli.run(main, [define_trainer_flags, mwms_flags.define_mwms])


if __name__ == "__main__":
  run()
