"""The TF2 path as TF2 users write it: Keras model.fit with Horovod's callbacks.

    horovodrun -np 4 python -m legacy_hvd.train_keras --batch_size=64

The flags, data, model, schedule, step log, results.json and faults of
legacy_hvd.train and legacy_hvd.train_tf2; the TF2 loop's checkpoints.

Read as Horovod's tensorflow2_keras_mnist.py: `grep -n "Horovod:"` lists
every distributed touch point, in order. The runtime's callbacks, in their
one order, and the epochs are training/eager_job.py's.
"""
import dataclasses
import importlib.util
import os

# Horovod: its Keras integration (0.28.1) needs Keras 2. On TF >= 2.16 that
# is the tf_keras package, which TensorFlow puts behind tf.keras only when
# TF_USE_LEGACY_KERAS=1 is set before it is first imported: here, before the
# imports below (main refuses Keras 3 in one line; docs/stacks.md).
if importlib.util.find_spec("tf_keras") is not None:
  os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from absl import flags
import horovod.tensorflow as hvd
import horovod.tensorflow.keras as hvd_keras
# The TF2 API on TF 2 and on TF 1.15 alike (with compat.enable_v2_behavior).
import tensorflow.compat.v2 as tf

from flags import define_trainer_flags
from flags import keras as keras_flags
from legacy_hvd.checkpoints import object_checkpoints
from legacy_hvd.common import cli
from legacy_hvd.common import compat
from legacy_hvd.common.config import Config
from legacy_hvd.common.signals import StopSignals
from legacy_hvd.model import keras_cnn
from legacy_hvd.model import keras_compat
from legacy_hvd.rank import devices
from legacy_hvd.collectives import horovod_collectives
from legacy_hvd.rank import startup
from legacy_hvd.rank.world import Ranks
from legacy_hvd.training import eager_job
from legacy_hvd.training import job
from legacy_hvd.training import keras_callbacks


def main(argv):
  del argv
  compat.enable_v2_behavior()   # before any op: TF 1.15 starts in graph mode
  # A Keras optimizer (results.json records the flags).
  config = dataclasses.replace(Config.from_flags(flags.FLAGS),
                               optimizer_impl="keras")
  stop_signals = StopSignals().install()
  if keras_compat.keras_version().startswith("3."):
    # Horovod 0.28.1's DistributedOptimizer needs Keras 2's optimizers
    # (tried on TF 2.16 and 2.18: docs/stacks.md, "TF >= 2.16").
    cli.fail(f"Keras {keras_compat.keras_version()} behind tf.keras: Horovod "
             "0.28.1's Keras integration needs Keras 2: pip install "
             f"--no-deps '{keras_compat.TF_KERAS_REQUIREMENT}' (this module "
             "then sets TF_USE_LEGACY_KERAS=1; leave it unset or 1), or use "
             "legacy_hvd.train_tf2")
  data, own_threads = startup.before_horovod(config)
  # Horovod: initialize Horovod, once the inputs are known to be usable.
  hvd_keras.init()
  ranks = Ranks.of(hvd_keras)
  # Horovod: pin each process to one GPU: the one numbered by its local rank
  # (before the eager context starts; TF 1.15 has these names too).
  gpu = devices.local_gpu(config, ranks)   # None: a host without GPUs
  if gpu:
    tf.config.experimental.set_memory_growth(gpu, True)
    tf.config.experimental.set_visible_devices(gpu, "GPU")
  # Horovod: on CPU, the cores are what the local ranks share: each its
  # part, its thread pools sized to it.
  devices.place_eager_rank(config, ranks, own_threads)
  with eager_job.start(config, data, ranks, stop_signals, "Keras fit",
                       horovod_collectives.Collectives()) as runtime:
    train(config, data, ranks, runtime)
    # Horovod: the final scores on every rank; rank 0 alone writes
    # results.json.
    runtime.finish("keras-fit")


def train(config, data, ranks, runtime):
  """Trains with model.fit and the runtime's callbacks. A stop signal ends
  the process in them, once rank 0 saved the step where all ranks
  stopped."""
  plan = runtime.plan
  net, params = keras_cnn.build(config.seed)
  # Horovod: the learning rate scaled with the number of workers (times
  # hvd.size() for --lr_scaling=linear), reached by a linear warm-up (the
  # same function of the step as the other paths; docs/tf1-vs-tf2.md says
  # why not Horovod's LearningRateWarmupCallback).
  lr_schedule = plan.lr_schedule   # job.Plan: the scale of ranks.size
  learning_rate = keras_cnn.LearningRate(*lr_schedule)
  # Horovod: average gradients over all ranks with allreduce before updating.
  optimizer = hvd_keras.DistributedOptimizer(
      keras_cnn.make_optimizer(config.optimizer, config.adam_epsilon),
      compression=job.compression(config, hvd))
  optimizer.learning_rate = learning_rate
  net.compile(optimizer=optimizer, loss=keras_cnn.loss,
              metrics=keras_cnn.batch_metrics(),
              **keras_compat.KERAS_COMPILE_OPTIONS)

  step = optimizer.iterations
  # Every rank holds the optimizer's state in the same order before rank 0
  # restores into it (and before the broadcasts pair it up by position).
  keras_compat.create_keras_optimizer_slots(optimizer, list(params.values()))
  # Horovod: only rank 0 writes checkpoints (the others would write over its
  # files); it resumes from its newest, the others from its values.
  checkpoints = (object_checkpoints.restore_newest(
      config.model_dir, step, optimizer, params, lr_schedule)
                 if ranks.rank == 0 else None)
  # Horovod: rank 0's weights, step and optimizer state (fresh or restored)
  # on every rank before the first step. Horovod's callback alone would
  # broadcast after the first step, whose gradients other ranks would then
  # have taken at their own (not the restored) weights.
  # (`weights`: Horovod's `variables()` returns values on TF 1.15.)
  hvd.broadcast_variables(list(params.values()) + optimizer.weights,
                          root_rank=0)
  start = int(step.numpy())
  # Horovod: each rank reads its own shard of the training set.
  dataset = job.batches(config, data.train_images, data.train_labels,
                        ranks.size, ranks.rank, start * config.batch_size)
  net.fit(dataset, verbose=0, **runtime.fit_arguments(
      net, params, learning_rate, checkpoints,
      first=[
          # Horovod: after the first batch, rank 0's weights and optimizer
          # state everywhere again (Horovod's callback, as users write it;
          # on TF 1.15, where it calls Variable.ref(), callbacks' stand-in
          # does the same).
          (hvd_keras.callbacks.BroadcastGlobalVariablesCallback(0)
           if keras_compat.VARIABLE_REF
           else keras_callbacks.BroadcastGlobalVariablesCallback(0)),
          # Horovod: epoch-end metrics averaged over ranks, before
          # TensorBoard (and any other callback) reads them (given tf.keras's
          # backend: on TF >= 2.16 Horovod's is Keras 3's).
          keras_compat.with_tf_keras_backend(
              hvd_keras.callbacks.MetricAverageCallback()),
      ],
      # Horovod: only rank 0 writes TensorBoard logs (and checkpoints).
      last=[tf.keras.callbacks.TensorBoard(config.model_dir, profile_batch=0)]
      if ranks.rank == 0 else []))


def run():
  """Console-script entry point (legacy-hvd-train-keras)."""
  cli.run(main, [define_trainer_flags, keras_flags.define_keras])


if __name__ == "__main__":
  run()
