"""legacy_hvd.train_keras past Horovod: model.fit on MultiWorkerMirrored-
Strategy, as TensorFlow's multi-worker Keras tutorial writes it; the runtime is
training/eager_job.py's. `grep -n "tf.distribute:"` lists the touch points.

    python -m legacy_hvd.launch.workers -H localhost:4 -- \\
        python -m legacy_hvd.train_mwms_keras --batch_size=64
"""
import dataclasses
import importlib.util
import os

# Keras 2 behind tf.keras on TF >= 2.16, as in train_keras.
if importlib.util.find_spec("tf_keras") is not None:
  os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from absl import flags
import tensorflow.compat.v2 as tf

from flags import define_trainer_flags
from flags import mwms as mwms_flags
from legacy_hvd.checkpoints import object_checkpoints
from legacy_hvd.collectives import strategy_collectives
from legacy_hvd.common import cli
from legacy_hvd.common import compat
from legacy_hvd.common.config import Config
from legacy_hvd.common.signals import StopSignals
from legacy_hvd.model import keras_cnn
from legacy_hvd.model import keras_compat
from legacy_hvd.rank import cluster
from legacy_hvd.rank import devices
from legacy_hvd.rank import startup
from legacy_hvd.rank.world import Ranks
from legacy_hvd.training import eager_job
from legacy_hvd.training import job


def main(argv):
  del argv
  compat.enable_v2_behavior()
  config = dataclasses.replace(Config.from_flags(flags.FLAGS),
                               optimizer_impl="keras")
  stop_signals = StopSignals().install()
  if keras_compat.keras_version().startswith("3."):
    cli.fail(f"Keras {keras_compat.keras_version()} behind tf.keras: this "
             "trainer needs Keras 2: pip install --no-deps "
             f"'{keras_compat.TF_KERAS_REQUIREMENT}'")
  data, own_threads = startup.before_horovod(config)
  gpus = tf.config.list_physical_devices("GPU")
  resolver = cluster.cluster_resolver(len(gpus))
  workers = resolver.cluster_spec().as_dict().get("worker", ["localhost:0"])
  ranks = Ranks.of_workers(workers, resolver.task_id or 0)
  # tf.distribute: one GPU per worker, numbered by its place on its host.
  gpu = devices.local_gpu(config, ranks)   # None: a host without GPUs
  if gpu:
    tf.config.experimental.set_memory_growth(gpu, True)
    tf.config.set_visible_devices(gpu, "GPU")
  devices.place_eager_rank(config, ranks, own_threads)
  # tf.distribute: one replica per worker; a dead peer times a step out;
  # NCCL on a GPU (AUTO would take TensorFlow's ring).
  implementation = tf.distribute.experimental.CommunicationImplementation
  with cluster.ending_if_the_cluster_fails(workers, ranks.rank):
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        cluster_resolver=resolver,
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=implementation.NCCL if gpu else implementation.AUTO,
            timeout_seconds=config.collective_timeout))
  # TensorFlow's pre-emption notifier took SIGTERM: the job's stop again.
  cluster.take_back_sigterm(stop_signals)
  collectives = strategy_collectives.Collectives(strategy, ranks.rank)
  with eager_job.start(config, data, ranks, stop_signals, "MWMS Keras fit",
                       collectives) as runtime:
    train(config, data, ranks, runtime, strategy, collectives)
    # tf.distribute: the chief alone writes results.json.
    runtime.finish("mwms-fit")


def train(config, data, ranks, runtime, strategy, collectives):
  """Trains with model.fit under `strategy` and the runtime's callbacks."""
  plan = runtime.plan
  # tf.distribute: the learning rate scaled with the workers (job.Plan's).
  lr_schedule = plan.lr_schedule
  # tf.distribute: made and compiled in the scope: mirrored; fit sums the
  # workers' gradients of their share of the global batch's loss.
  with strategy.scope():
    net, params = keras_cnn.build(config.seed)
    learning_rate = keras_cnn.LearningRate(*lr_schedule)
    optimizer = keras_cnn.make_optimizer(config.optimizer,
                                         config.adam_epsilon)
    optimizer.learning_rate = learning_rate
    net.compile(optimizer=optimizer, loss=keras_cnn.loss,
                metrics=keras_cnn.batch_metrics(),
                **keras_compat.KERAS_COMPILE_OPTIONS)
    # tf.distribute: each worker logs its own values (the default sums).
    net.distribute_reduction_method = "first"
    # tf.distribute: slots made on every worker before the chief restores.
    keras_compat.create_keras_optimizer_slots(optimizer,
                                              list(params.values()))
  step = optimizer.iterations
  # tf.distribute: the chief alone writes checkpoints, and resumes.
  checkpoints = (object_checkpoints.restore_newest(
      config.model_dir, step, optimizer, params, lr_schedule)
                 if ranks.rank == 0 else None)
  # tf.distribute: the chief's weights, step and slots on every worker.
  collectives.broadcast_variables(list(params.values()) + optimizer.weights)
  start = int(step.numpy())
  # tf.distribute: each worker its shard, in the Horovod jobs' order; fit
  # does not shard a distributed dataset again.
  dataset = strategy.distribute_datasets_from_function(
      lambda context: job.batches(
          config, data.train_images, data.train_labels,
          context.num_input_pipelines, context.input_pipeline_id,
          start * config.batch_size))
  net.fit(dataset, verbose=0, **runtime.fit_arguments(
      net, params, learning_rate, checkpoints, first=[],
      # tf.distribute: only the chief writes TensorBoard logs.
      last=[tf.keras.callbacks.TensorBoard(config.model_dir, profile_batch=0)]
      if ranks.rank == 0 else []))


def run():
  """Console-script entry point (legacy-hvd-train-mwms-keras)."""
  cli.run(main, [define_trainer_flags, mwms_flags.define_mwms])


if __name__ == "__main__":
  run()
