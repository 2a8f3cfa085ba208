"""The TF2 path as TF2 users write it: Keras model.fit with Horovod's callbacks.

    horovodrun -np 4 python -m legacy_hvd.train_keras --batch_size=64

The shape of Horovod's own TF2 Keras example: hvd.DistributedOptimizer
around a Keras optimizer (tf.keras.optimizers.legacy on Keras 2.11+, the
ones Horovod 0.28.1 supports), BroadcastGlobalVariablesCallback(0),
MetricAverageCallback, checkpoints and TensorBoard on rank 0. Same flags,
data pipeline and shards, model (same variables and initial values for the
same --seed), learning-rate scaling and warm-up, step log and results.json
as legacy_hvd.train and legacy_hvd.train_tf2, and the same fault handling
(legacy_hvd/faults.py). Checkpoints are TF2 object-based ones with the TF2
loop's variable keys. `grep -n "Horovod:"` lists every distributed touch
point.
"""
import dataclasses
import importlib.util
import math
import os

# Horovod: its Keras integration (0.28.1) needs Keras 2. On TF >= 2.16 that
# is the tf_keras package, which TensorFlow puts behind tf.keras only when
# TF_USE_LEGACY_KERAS=1 is set before it is first imported: here, before the
# imports below (main refuses Keras 3 in one line; README, "TF >= 2.16").
if importlib.util.find_spec("tf_keras") is not None:
  os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from absl import flags
from absl import logging
import horovod.tensorflow as hvd
import horovod.tensorflow.keras as hvd_keras
# The TF2 API on TF 2 and on TF 1.15 alike (with compat.enable_v2_behavior).
import tensorflow.compat.v2 as tf

from flags import define_trainer_flags
from flags import keras as keras_flags
from legacy_hvd import callbacks
from legacy_hvd import cli
from legacy_hvd import compat
from legacy_hvd import devices
from legacy_hvd import evaluation
from legacy_hvd import faults
from legacy_hvd import keras_model
from legacy_hvd import model
from legacy_hvd import results
from legacy_hvd import runtime
from legacy_hvd import schedule
from legacy_hvd import startup
from legacy_hvd.config import Config
from legacy_hvd.data import pipeline
from legacy_hvd.progress import Progress
from legacy_hvd.progress import StepLog
from legacy_hvd.signals import StopSignals


def train(config, data, rank, size, stop_signals, watch):
  """Trains with model.fit, evaluates; returns the summary dict (all ranks).

  Returns None when a stop signal ended training early (rank 0 has saved a
  checkpoint at the step where all ranks stopped).
  """
  steps_per_epoch = schedule.steps_per_epoch(len(data.train_labels),
                                             config.batch_size, size)
  max_steps = config.max_steps or config.epochs * steps_per_epoch
  net, params = keras_model.build(config.seed)
  # Horovod: average gradients over all ranks with allreduce before updating.
  optimizer = hvd_keras.DistributedOptimizer(
      keras_model.make_optimizer(config.optimizer, config.adam_epsilon),
      compression=(hvd.Compression.fp16 if config.fp16_allreduce
                   else hvd.Compression.none))
  # Horovod: scale the learning rate with the number of workers, warming up
  # (the same function of the step as the other paths; see README for
  # Horovod's LearningRateWarmupCallback).
  learning_rate = keras_model.LearningRate(
      config.lr, schedule.lr_scale(config.lr_scaling, size),
      round(config.warmup_epochs * steps_per_epoch))
  optimizer.learning_rate = learning_rate
  net.compile(optimizer=optimizer, loss=keras_model.loss,
              metrics=keras_model.batch_metrics(),
              **compat.KERAS_COMPILE_OPTIONS)

  step = optimizer.iterations
  # Every rank holds the optimizer's state in the same order before rank 0
  # restores into it (and before the broadcasts pair it up by position).
  compat.create_keras_optimizer_slots(optimizer, list(params.values()))
  checkpoint = tf.train.Checkpoint(
      step=step, optimizer=optimizer,
      **{name.replace("/", "_"): variable for name, variable in params.items()})
  manager = tf.train.CheckpointManager(checkpoint, config.model_dir,
                                       max_to_keep=5) if rank == 0 else None
  saved_step = None
  if manager and manager.latest_checkpoint:
    checkpoint.restore(manager.latest_checkpoint)
    saved_step = int(step.numpy())
  # Horovod: rank 0's weights, step and optimizer state (fresh or restored)
  # on every rank before the first step. Horovod's callback alone would
  # broadcast after the first step, whose gradients other ranks would then
  # have taken at their own (not the restored) weights.
  # (`weights`: Horovod's `variables()` returns values on TF 1.15.)
  hvd.broadcast_variables(list(params.values()) + optimizer.weights,
                          root_rank=0)
  start = int(step.numpy())

  if config.synthetic:
    dataset = pipeline.synthetic_batches(config.batch_size, config.seed)
  else:
    # Horovod: each rank reads its own shard of the training set.
    dataset = pipeline.train_batches(
        data.train_images, data.train_labels, config.batch_size,
        num_shards=size, shard_index=rank, seed=config.seed,
        augment=config.augment, skip_examples=start * config.batch_size)
  progress = Progress(config.log_every_n_steps, config.batch_size * size,
                      log=rank == 0, steps_per_epoch=steps_per_epoch,
                      last_step=max_steps)
  stop = callbacks.StopCallback(stop_signals, size, max_steps)
  fit_callbacks = [
      # Horovod: after the first step, rank 0's weights and optimizer state
      # everywhere again (Horovod's callback, as users write it; on TF 1.15
      # a stand-in).
      callbacks.broadcast_global_variables_callback(0),
      # Horovod: epoch-end metrics averaged over ranks, before TensorBoard
      # (and any other callback) reads them (given tf.keras's backend: on
      # TF >= 2.16 Horovod's is Keras 3's).
      compat.with_tf_keras_backend(
          hvd_keras.callbacks.MetricAverageCallback()),
      callbacks.ProgressCallback(
          progress, StepLog(config.step_log if rank == 0 else None),
          learning_rate, params,
          summary_dir=config.model_dir if rank == 0 else None),
      stop,
  ]
  if rank == 0:
    # Horovod: only rank 0 writes checkpoints and TensorBoard logs.
    fit_callbacks += [
        callbacks.CheckpointCallback(manager, config.save_checkpoints_steps,
                                     saved_step),
        tf.keras.callbacks.TensorBoard(config.model_dir, profile_batch=0)]
  if start < max_steps:
    try:
      # Keras epochs of steps_per_epoch steps over the endless stream; the
      # StopCallback ends every rank at max_steps itself.
      first_epoch = start // steps_per_epoch
      net.fit(dataset, steps_per_epoch=steps_per_epoch, verbose=0,
              initial_epoch=first_epoch, callbacks=fit_callbacks,
              epochs=first_epoch + math.ceil(
                  (max_steps - start) / steps_per_epoch))
    except tf.errors.OpError as e:
      faults.end_on_error(e, progress, size, watch)
  if stop.stopped:
    return None

  # Horovod: every rank scores its test shard; the counts are summed.
  metrics = evaluation.evaluate_eagerly(
      net, data.test_images, data.test_labels, size, rank,
      lambda counts: hvd.allreduce(counts, op=hvd.Sum))
  # Horovod: gather every rank's weight digest to check they stayed in sync.
  digests = hvd.allgather(model.weight_digest(params)[None]).numpy().tolist()
  return results.run_summary(metrics, digests, progress, size,
                             config.batch_size, steps_per_epoch)


def main(argv):
  del argv
  compat.enable_v2_behavior()   # before any op: TF 1.15 starts in graph mode
  # A Keras optimizer (results.json records the flags).
  config = dataclasses.replace(Config.from_flags(flags.FLAGS),
                               optimizer_impl="keras")
  stop_signals = StopSignals().install()
  if compat.keras_version().startswith("3."):
    # Horovod 0.28.1's DistributedOptimizer needs Keras 2's optimizers
    # (tried on TF 2.16 and 2.18: README, "TF >= 2.16").
    cli.fail(f"Keras {compat.keras_version()} behind tf.keras: Horovod "
             "0.28.1's Keras integration needs Keras 2: pip install "
             f"--no-deps '{compat.TF_KERAS_REQUIREMENT}' (this module then "
             "sets TF_USE_LEGACY_KERAS=1; leave it unset or 1), or use "
             "legacy_hvd.train_tf2")
  data = startup.before_horovod(config)
  own_threads = runtime.threads()   # pinned below; Horovod's stay free
  # Horovod: initialize Horovod, once the inputs are known to be usable.
  hvd_keras.init()
  rank, size = hvd_keras.rank(), hvd_keras.size()
  devices.pin_devices(config, rank, hvd_keras.local_rank(),
                      hvd_keras.local_size(), hvd_keras.cross_rank(),
                      hvd_keras.cross_size(), own_threads)
  faults.check_model_dir_on_rank0(rank, config.model_dir)
  watch = faults.watch_lost_hosts(rank, size, config.model_dir)
  if rank == 0:
    logging.info("Keras fit on %s: %d train, %d test images; %d workers",
                 data.source, len(data.train_labels), len(data.test_labels),
                 size)
  summary = train(config, data, rank, size, stop_signals, watch)
  faults.exit_if_stopped(summary, stop_signals, rank, config.model_dir)
  if rank == 0:
    results.write_run_results(summary, config, data.source, "keras-fit")


def run():
  define_trainer_flags()
  keras_flags.define_keras()
  cli.run(main)


if __name__ == "__main__":
  run()
