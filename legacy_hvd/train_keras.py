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
loop's variable keys; what it shares with the loop is in
legacy_hvd/eager_trainer.py. `grep -n "Horovod:"` lists every distributed touch
point.
"""
import dataclasses
import importlib.util
import math
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
from legacy_hvd import callbacks
from legacy_hvd import cli
from legacy_hvd import compat
from legacy_hvd import eager_trainer
from legacy_hvd import faults
from legacy_hvd import keras_model
from legacy_hvd import startup
from legacy_hvd import trainer
from legacy_hvd.config import Config
from legacy_hvd.signals import StopSignals
from legacy_hvd.world import Ranks


def train(config, data, ranks, stop_signals, watch):
  """Trains with model.fit, evaluates; returns the summary dict (all ranks).

  Returns None when a stop signal ended training early (rank 0 has saved a
  checkpoint at the step where all ranks stopped).
  """
  plan = trainer.Plan.of(config, len(data.train_labels), ranks.size)
  net, params = keras_model.build(config.seed)
  # Horovod: average gradients over all ranks with allreduce before updating.
  optimizer = hvd_keras.DistributedOptimizer(
      keras_model.make_optimizer(config.optimizer, config.adam_epsilon),
      compression=trainer.compression(config, hvd))
  # Horovod: the learning rate scaled with the number of workers, warming up
  # (the same function of the step as the other paths; docs/tf1-vs-tf2.md
  # says why not Horovod's LearningRateWarmupCallback).
  learning_rate = keras_model.LearningRate(config.lr, plan.lr_scale,
                                           plan.warmup_steps)
  optimizer.learning_rate = learning_rate
  net.compile(optimizer=optimizer, loss=keras_model.loss,
              metrics=keras_model.batch_metrics(),
              **compat.KERAS_COMPILE_OPTIONS)

  step = optimizer.iterations
  # Every rank holds the optimizer's state in the same order before rank 0
  # restores into it (and before the broadcasts pair it up by position).
  compat.create_keras_optimizer_slots(optimizer, list(params.values()))
  manager, saved_step = eager_trainer.restore(config.model_dir, ranks.rank,
                                              step, optimizer, params,
                                              learning_rate)
  # Horovod: rank 0's weights, step and optimizer state (fresh or restored)
  # on every rank before the first step. Horovod's callback alone would
  # broadcast after the first step, whose gradients other ranks would then
  # have taken at their own (not the restored) weights.
  # (`weights`: Horovod's `variables()` returns values on TF 1.15.)
  hvd.broadcast_variables(list(params.values()) + optimizer.weights,
                          root_rank=0)
  start = int(step.numpy())

  dataset = trainer.batches(config, data.train_images, data.train_labels,
                            ranks, start * config.batch_size)
  progress, step_log = trainer.progress_and_step_log(config, plan, ranks)
  stop = callbacks.StopCallback(stop_signals, ranks.size, plan.max_steps)
  test_set, held_out = eager_trainer.held_out_evaluation(net, data, ranks,
                                                         plan, config,
                                                         step_log)
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
          progress, step_log, learning_rate, params,
          summary_dir=config.model_dir if ranks.rank == 0 else None),
      stop,
  ]
  if held_out.every_n_steps:
    # Horovod: every rank scores its test shard after the same steps; the
    # counts are summed.
    fit_callbacks.append(callbacks.EvaluationCallback(held_out, test_set,
                                                      stop))
  if ranks.rank == 0:
    # Horovod: only rank 0 writes checkpoints and TensorBoard logs.
    fit_callbacks += [
        callbacks.CheckpointCallback(manager, config.save_checkpoints_steps,
                                     saved_step),
        tf.keras.callbacks.TensorBoard(config.model_dir, profile_batch=0)]
  if start < plan.max_steps:
    try:
      # Keras epochs of steps_per_epoch steps over the endless stream; the
      # StopCallback ends every rank at max_steps itself.
      first_epoch = start // plan.steps_per_epoch
      net.fit(dataset, steps_per_epoch=plan.steps_per_epoch, verbose=0,
              initial_epoch=first_epoch, callbacks=fit_callbacks,
              epochs=first_epoch + math.ceil(
                  (plan.max_steps - start) / plan.steps_per_epoch))
    except tf.errors.OpError as e:
      faults.end_on_error(e, progress, ranks.size, watch)
  if stop.stopped:
    return None
  return eager_trainer.final_summary(test_set, held_out, params, ranks,
                                     progress, plan, config)


def main(argv):
  del argv
  compat.enable_v2_behavior()   # before any op: TF 1.15 starts in graph mode
  # A Keras optimizer (results.json records the flags).
  config = dataclasses.replace(Config.from_flags(flags.FLAGS),
                               optimizer_impl="keras")
  stop_signals = StopSignals().install()
  if compat.keras_version().startswith("3."):
    # Horovod 0.28.1's DistributedOptimizer needs Keras 2's optimizers
    # (tried on TF 2.16 and 2.18: docs/stacks.md, "TF >= 2.16").
    cli.fail(f"Keras {compat.keras_version()} behind tf.keras: Horovod "
             "0.28.1's Keras integration needs Keras 2: pip install "
             f"--no-deps '{compat.TF_KERAS_REQUIREMENT}' (this module then "
             "sets TF_USE_LEGACY_KERAS=1; leave it unset or 1), or use "
             "legacy_hvd.train_tf2")
  data, own_threads = startup.before_horovod(config)
  # Horovod: initialize Horovod, once the inputs are known to be usable.
  hvd_keras.init()
  ranks = Ranks.of(hvd_keras)
  watch = eager_trainer.start(config, data, ranks, own_threads, "Keras fit")
  with faults.end_on_write_failure(config.model_dir, watch):
    summary = train(config, data, ranks, stop_signals, watch)
    trainer.finish(summary, stop_signals, config, data, ranks.rank,
                   "keras-fit")


def run():
  """Console-script entry point (legacy-hvd-train-keras)."""
  cli.run(main, [define_trainer_flags, keras_flags.define_keras])


if __name__ == "__main__":
  run()
