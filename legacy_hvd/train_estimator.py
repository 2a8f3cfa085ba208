"""The TF1 job as tf.estimator code: model_fn, input_fn, Estimator.

    horovodrun -np 4 python -m legacy_hvd.train_estimator --batch_size=64

The same model, data, shards, schedule, optimizer, flags, checkpoints and
results.json as legacy_hvd.train (the MonitoredTrainingSession job; both
build their step with legacy_hvd.graph_trainer), written the way much
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
import gc
import os
import tempfile

from absl import flags
from absl import logging
import horovod.tensorflow as hvd
import tensorflow.compat.v1 as tf

from flags import define_trainer_flags
from flags.estimator import define_estimator
from legacy_hvd import checkpoint_state
from legacy_hvd import cli
from legacy_hvd import compat
from legacy_hvd import devices
from legacy_hvd import faults
from legacy_hvd import graph_trainer
from legacy_hvd import heldout
from legacy_hvd import hooks
from legacy_hvd import migration
from legacy_hvd import model
from legacy_hvd import numerics
from legacy_hvd import results
from legacy_hvd import scoring
from legacy_hvd import startup
from legacy_hvd import trainer
from legacy_hvd.config import Config
from legacy_hvd.data import pipeline
from legacy_hvd.signals import StopSignals
from legacy_hvd.world import Ranks

NUM_COUNTS = 1 + 2 * scoring.NUM_CLASSES   # scoring.batch_counts' length


def model_fn_for(config, plan, ranks, stop_signals, progress, step_log,
                 made):
  """The Estimator's model_fn; the hooks it makes go in `made` (a dict)."""
  rank0 = ranks.rank == 0

  def model_fn(features, labels, mode):
    global_step = tf.train.get_global_step()
    if mode == tf.estimator.ModeKeys.TRAIN:
      step = graph_trainer.build_step(config, plan, global_step, features,
                                      labels, hvd)
      stop_flag, any_stop = graph_trainer.stop_request(ranks.size, hvd)
      made["stop"], progress_hook = graph_trainer.step_hooks(
          step, stop_signals, stop_flag, any_stop, progress, step_log,
          summary_dir=config.model_dir if rank0 else None)
      scaffold = tf.train.Scaffold()
      # Horovod: only rank 0 saves checkpoints (its own saver hook: the one
      # Estimator adds would read the global step again after every step).
      return tf.estimator.EstimatorSpec(
          mode, loss=step.loss, train_op=step.train_op, scaffold=scaffold,
          training_hooks=[made["stop"], progress_hook],
          training_chief_hooks=[hooks.checkpoint_saver(
              config.model_dir, config.save_checkpoints_steps,
              scaffold)] if rank0 else [])
    # EVAL: this rank's shard of the test set, counted batch by batch.
    params = model.create_variables(config.seed)
    counts = scoring.batch_counts(model.forward(features, params), labels)
    total = tf.Variable(tf.zeros([NUM_COUNTS], tf.float64), trainable=False,
                        collections=[tf.GraphKeys.LOCAL_VARIABLES],
                        name="test_counts")
    # Horovod: the counts summed over all ranks and every rank's weight
    # digest, fetched once at the end of evaluate(), on every rank.
    summed = hvd.allreduce(total.read_value(), op=hvd.Sum)
    digests = hvd.allgather(model.weight_digest(params)[None])
    return tf.estimator.EstimatorSpec(
        mode, loss=tf.cast(
            counts[0] / tf.reduce_sum(counts[1 + scoring.NUM_CLASSES:]),
            tf.float32),
        eval_metric_ops={
            "counts": (summed, total.assign_add(counts)),
            "weight_digests": (digests, tf.no_op())})
  return model_fn


def run_config(config, rank0):
  """Estimator's RunConfig: the one session config; summaries on rank 0;
  no checkpoints but rank 0's own saver hook (model_fn_for)."""
  return tf.estimator.RunConfig(
      # Horovod: each rank's GPU (visible_device_list = its local rank),
      # cores and thread pools, as every session of the process has them.
      session_config=devices.session_config(),
      save_summary_steps=config.log_every_n_steps if rank0 else None,
      save_checkpoints_steps=None, save_checkpoints_secs=None,
      log_step_count_steps=None)


def train_until(config, plan, start_step):
  """The global steps each train() call ends at: every
  --eval_every_n_steps, and the last one."""
  every = config.eval_every_n_steps or plan.max_steps
  return list(range(start_step - start_step % every + every, plan.max_steps,
                    every)) + [plan.max_steps]


def train(config, data, ranks, stop_signals, start_step, scratch_dir):
  """Alternates Estimator.train and .evaluate on every rank; returns the
  summary dict, or None when a stop signal ended training early."""
  plan = trainer.Plan.of(config, len(data.train_labels), ranks.size)
  progress, step_log = trainer.progress_and_step_log(config, plan, ranks)
  made = {}
  rank0 = ranks.rank == 0
  # Estimator.evaluate writes the eval run's summaries itself.
  held_out = heldout.HeldOut(config.eval_every_n_steps, plan.max_steps,
                             ranks.rank, config.model_dir, step_log,
                             write_summaries=False)
  # Horovod: rank 0's model_dir holds the checkpoints, summaries and
  # results; the other ranks' Estimators get a scratch directory instead of
  # one of their own in /tmp.
  estimator = tf.estimator.Estimator(
      model_fn_for(config, plan, ranks, stop_signals, progress, step_log,
                   made),
      model_dir=config.model_dir if rank0 else scratch_dir,
      config=run_config(config, rank0))
  train_input = hooks.ArrayInput(
      data.train_images, data.train_labels,
      lambda images, labels, skip: trainer.batches(config, images, labels,
                                                   ranks, skip),
      examples_per_step=config.batch_size)
  test_input = hooks.ArrayInput(
      data.test_images, data.test_labels,
      lambda images, labels, _: pipeline.test_batches(images, labels,
                                                      ranks.size, ranks.rank))
  for until in train_until(config, plan, start_step):
    try:
      # Horovod: every rank starts from rank 0's variables (restored from
      # its checkpoint) and stops at the same global step.
      estimator.train(train_input, max_steps=until, hooks=[
          hooks.BroadcastGlobalVariablesHook(0), train_input])
    except tf.errors.InvalidArgumentError as e:
      if not numerics.is_non_finite_gradient(e):
        raise
      faults.fail_diverged(progress)
    if made["stop"].stopped:
      step_log.close()
      return None
    # Horovod: evaluate() restores on rank 0 only; the others take its
    # weights by broadcast, then all sum their counts in the same step.
    evaluation = estimator.evaluate(test_input, hooks=[
        hooks.BroadcastGlobalVariablesHook(0), test_input])
    metrics = scoring.metrics_from_counts(evaluation["counts"])
    if held_out.due(until):
      held_out.record(until, metrics)
  step_log.close()
  held_out.record_final(plan.max_steps, metrics)
  summary = results.run_summary(
      metrics, evaluation["weight_digests"].tolist(), progress, ranks.size,
      config.batch_size, plan.steps_per_epoch)
  return dict(summary, start_step=start_step, **held_out.results())


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
  # Horovod: each rank's GPU (its local rank's), cores and thread pools.
  devices.place_graph_rank(config, ranks, own_threads)
  plan = trainer.Plan.of(config, len(data.train_labels), ranks.size)
  startup.check_on_rank0(
      ranks.rank, faults.model_dir_checks(
          config.model_dir, model.PARAM_SHAPES,
          # A TF2 trainer's checkpoint becomes this job's (rank 0).
          lambda: migration.to_tf1(config.model_dir, config.optimizer,
                                   trainer.rate_of(config, plan))))
  start_step = graph_trainer.broadcast_from_rank0(
      checkpoint_state.latest_step(config.model_dir) if ranks.rank == 0
      else 0, hvd)
  if start_step >= plan.max_steps:
    # Estimator.train would return at once on rank 0 only.
    if ranks.rank == 0:
      logging.info("Nothing to train: the checkpoint in %s is at step %d, "
                   "--max_steps is %d; that run's results are in %s",
                   config.model_dir, start_step, plan.max_steps,
                   os.path.join(config.model_dir, results.RESULTS_FILE))
    return
  watch = trainer.watch_hosts_and_log_start(
      config, data, ranks, graph_trainer.graph_allgather(hvd),
      "Estimator job")
  summary = None
  with faults.end_on_write_failure(config.model_dir, watch):
    with tempfile.TemporaryDirectory(
        prefix="legacy_hvd_estimator_") as scratch:
      try:
        summary = train(config, data, ranks, stop_signals, start_step,
                        scratch)
      except tf.errors.OpError:
        # Horovod: a failed collective ends every rank; if a host was lost,
        # the first surviving rank names it in one line.
        if ranks.size == 1 or not watch.check():
          raise
    # Estimator's graphs are cycles of many Python objects: the
    # interpreter's last collection at exit took seconds, and after a stop
    # signal horovodrun kills a rank still exiting after 5 s. The process
    # ends here, so its objects need no collection: frozen, they get none.
    gc.freeze()
    trainer.finish(summary, stop_signals, config, data, ranks.rank,
                   "estimator")


def run():
  """Console-script entry point (legacy-hvd-train-estimator)."""
  cli.run(main, [define_trainer_flags, define_estimator])


if __name__ == "__main__":
  run()
