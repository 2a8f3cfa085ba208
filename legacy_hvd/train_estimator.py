"""The TF1 job as tf.estimator code: model_fn, input_fn, Estimator.

    horovodrun -np 4 python -m legacy_hvd.train_estimator --batch_size=64

The same model, data, shards, schedule, optimizer, flags, checkpoints and
results.json as legacy_hvd.train (the MonitoredTrainingSession job; both
build their step with legacy_hvd.training.graph_job), written the way much
legacy TF1 code is: an Estimator with Horovod's DistributedOptimizer and
BroadcastGlobalVariablesHook. The traps Estimator code meets across ranks
are closed here (docs/pitfalls.md):

- Rank 0 alone has the model directory. Estimator needs one on every rank
  (given none it makes one in /tmp and keeps it): the others get a scratch
  directory they write nothing to, removed at exit, and take rank 0's
  variables by broadcast at the start of every train() and evaluate().
- train_and_evaluate hangs across ranks (Horovod #182): here every rank
  alternates train(max_steps=next) and evaluate(), the same calls in the
  same order, each ending in the same step.
- A finished job re-run (Horovod #346, #1581): Estimator.train returns at
  once on rank 0, whose checkpoint is at max_steps, while the others wait
  in its broadcast. Here rank 0's checkpoint step is agreed first, and every
  rank ends at once, in one line.

Refused where tf.estimator does not exist (TensorFlow >= 2.16).
`grep -n "Horovod:"` lists every distributed touch point.
"""
import os
import tempfile

from absl import flags
from absl import logging
import horovod.tensorflow as hvd
import tensorflow.compat.v1 as tf

from flags import define_trainer_flags
from flags.estimator import define_estimator
from legacy_hvd.common import checkpoint_state
from legacy_hvd.common import cli
from legacy_hvd.common import compat
from legacy_hvd.common import results
from legacy_hvd.common.config import Config
from legacy_hvd.common.signals import StopSignals
from legacy_hvd.data import pipeline
from legacy_hvd.model import cnn
from legacy_hvd.model import optimizers
from legacy_hvd.model import scoring
from legacy_hvd.rank import devices
from legacy_hvd.training import hooks
from legacy_hvd.collectives import horovod_collectives
from legacy_hvd.rank import startup
from legacy_hvd.rank.world import Ranks
from legacy_hvd.training import graph_job
from legacy_hvd.training import job

NUM_COUNTS = 1 + 2 * scoring.NUM_CLASSES   # scoring.batch_counts' length


def model_fn_for(config, plan, runtime, scratch):
  """The Estimator's model_fn; scratch: this rank's scratch directory,
  removed by a stop's exit."""

  def model_fn(features, labels, mode):
    global_step = tf.train.get_global_step()
    if mode == tf.estimator.ModeKeys.TRAIN:
      params = cnn.create_variables(config.seed)
      loss, accuracy = cnn.loss_and_accuracy(
          cnn.forward(features, params), labels)
      # Horovod: the learning rate scaled with the number of workers
      # (--lr_scaling of hvd.size(): job.Plan), warming up.
      learning_rate = plan.lr_schedule.rate(global_step)
      # Horovod: average gradients over all ranks with allreduce before
      # updating.
      optimizer = hvd.DistributedOptimizer(
          optimizers.v1(config.optimizer, learning_rate, config.adam_epsilon),
          compression=job.compression(config, hvd),
          backward_passes_per_step=config.backward_passes_per_step,
          average_aggregated_gradients=True)
      step = graph_job.build_step(optimizer, params, loss, accuracy,
                                  learning_rate, global_step)
      scaffold = tf.train.Scaffold()
      # Horovod: only rank 0 saves checkpoints (its own saver hook: the one
      # Estimator adds would read the global step again after every step).
      savers = [hooks.checkpoint_saver(
          config.model_dir, config.save_checkpoints_steps,
          scaffold)] if hvd.rank() == 0 else []
      return tf.estimator.EstimatorSpec(
          mode, loss=step.loss, train_op=step.train_op, scaffold=scaffold,
          **runtime.estimator_hooks(step, savers, scratch))
    # EVAL: this rank's shard of the test set, counted batch by batch.
    params = cnn.create_variables(config.seed)
    counts = scoring.batch_counts(cnn.forward(features, params), labels)
    total = tf.Variable(tf.zeros([NUM_COUNTS], tf.float64), trainable=False,
                        collections=[tf.GraphKeys.LOCAL_VARIABLES],
                        name="test_counts")
    # Horovod: the counts summed over all ranks and every rank's weight
    # digest, fetched once at the end of evaluate(), on every rank.
    summed = hvd.allreduce(total.read_value(), op=hvd.Sum)
    digests = hvd.allgather(cnn.weight_digest(params)[None])
    return tf.estimator.EstimatorSpec(
        mode, loss=tf.cast(
            counts[0] / tf.reduce_sum(counts[1 + scoring.NUM_CLASSES:]),
            tf.float32),
        eval_metric_ops={
            "counts": (summed, total.assign_add(counts)),
            "weight_digests": (digests, tf.no_op())})
  return model_fn


def train_until(config, plan, start_step):
  """Where each train() ends: every --eval_every_n_steps, and the last."""
  every = config.eval_every_n_steps or plan.max_steps
  return list(range(start_step - start_step % every + every, plan.max_steps,
                    every)) + [plan.max_steps]


def train(config, data, plan, session_config, runtime, start_step):
  """Alternates Estimator.train and .evaluate on every rank."""
  rank0 = hvd.rank() == 0
  with tempfile.TemporaryDirectory(prefix="legacy_hvd_estimator_") as scratch:
    # Horovod: rank 0's model_dir holds the checkpoints, summaries and
    # results; the other ranks' Estimators get a scratch directory instead
    # of one of their own in /tmp. RunConfig: the one ConfigProto (this
    # rank's GPU); summaries on rank 0; no checkpoints but rank 0's own
    # saver hook (model_fn_for).
    estimator = tf.estimator.Estimator(
        model_fn_for(config, plan, runtime, scratch),
        model_dir=config.model_dir if rank0 else scratch,
        config=tf.estimator.RunConfig(
            session_config=session_config,
            save_summary_steps=config.log_every_n_steps if rank0 else None,
            save_checkpoints_steps=None, save_checkpoints_secs=None,
            log_step_count_steps=None))
    train_input = hooks.ArrayInput(
        data.train_images, data.train_labels,
        # Horovod: each rank reads its own shard of the training set.
        lambda images, labels, skip: job.batches(
            config, images, labels, hvd.size(), hvd.rank(), skip),
        examples_per_step=config.batch_size)
    test_input = hooks.ArrayInput(
        data.test_images, data.test_labels,
        lambda images, labels, _: pipeline.test_batches(
            images, labels, hvd.size(), hvd.rank()))
    for until in train_until(config, plan, start_step):
      # Horovod: every rank starts from rank 0's variables (restored from
      # its checkpoint) and stops at the same global step.
      estimator.train(train_input, max_steps=until, hooks=[
          hooks.BroadcastGlobalVariablesHook(0), train_input])
      # Horovod: evaluate() restores on rank 0 only; the others take its
      # weights by broadcast, then all sum their counts in the same step.
      evaluation = estimator.evaluate(test_input, hooks=[
          hooks.BroadcastGlobalVariablesHook(0), test_input])
      runtime.evaluated(until,
                        scoring.metrics_from_counts(evaluation["counts"]),
                        evaluation["weight_digests"].tolist())


def main(argv):
  del argv  # cli.parse_flags allows none
  config = Config.from_flags(flags.FLAGS)
  if compat.estimator() is None:
    cli.fail(f"tf.estimator does not exist in TensorFlow "
             f"{tf.version.VERSION} (removed in 2.16); expected "
             "TensorFlow 1.15 to 2.15, or run legacy_hvd.train, the same "
             "job without Estimator")
  # Estimator logs at INFO, on every rank, its RunConfig, each model_fn call
  # and session, and every evaluation's arrays: they would bury the job's
  # own lines (TensorFlow's warnings still show).
  tf.get_logger().setLevel("WARNING")
  stop_signals = StopSignals().install()
  tf.disable_v2_behavior()
  data, own_threads = startup.before_horovod(config)
  # Horovod: initialize Horovod (after the inputs are known to be usable, so
  # a bad path stops every rank before any of them waits on the others).
  hvd.init()
  ranks = Ranks.of(hvd)
  # Horovod: pin each process to one GPU: the one numbered by its local
  # rank (one line if its host has fewer GPUs than ranks, or none under
  # --require_gpu). Every session of the process takes this one ConfigProto.
  devices.local_gpu(config, ranks)
  session_config = tf.ConfigProto()
  session_config.gpu_options.allow_growth = True
  session_config.gpu_options.visible_device_list = str(hvd.local_rank())
  # Horovod: on CPU, the cores are what the local ranks share: each its
  # part, the session's thread pools sized to it.
  devices.place_graph_rank(config, ranks, session_config, own_threads)
  # Horovod: the run's steps for hvd.size() workers (each reads 1/size of
  # an epoch), and its learning rate's scale (--lr_scaling).
  plan = job.Plan.of(config, len(data.train_labels), hvd.size())
  # Estimator.evaluate writes the eval run's summaries itself.
  # Horovod: the runtime's collectives (its checks' verdict, the roster, the
  # stop agreement, the test-set sums, the weights' check).
  collectives = horovod_collectives.GraphCollectives()
  runtime = graph_job.start(config, data, ranks, plan, stop_signals,
                            collectives, "Estimator job",
                            held_out_summaries=False)
  # Horovod: rank 0's checkpoint step on every rank, so that a finished job
  # ends on every rank (Estimator.train would return at once on rank 0
  # only, the others waiting in its broadcast).
  start_step = collectives.broadcast_from_rank0(
      checkpoint_state.latest_step(config.model_dir) if hvd.rank() == 0
      else 0)
  if start_step >= plan.max_steps:
    if hvd.rank() == 0:
      logging.info("Nothing to train: the checkpoint in %s is at step %d, "
                   "--max_steps is %d; that run's results are in %s",
                   config.model_dir, start_step, plan.max_steps,
                   os.path.join(config.model_dir, results.RESULTS_FILE))
    return
  with runtime:
    train(config, data, plan, session_config, runtime, start_step)
    # Horovod: rank 0 alone writes results.json.
    runtime.finish("estimator", start_step=start_step)


def run():
  """Console-script entry point (legacy-hvd-train-estimator)."""
  cli.run(main, [define_trainer_flags, define_estimator])


if __name__ == "__main__":
  run()
