"""Horovod data-parallel training of the CIFAR-10 CNN as a static TF1 graph.

    horovodrun -np 4 python -m legacy_hvd.train --batch_size=64

Every rank builds the same graph, reads its own shard of the data and runs
the same number of steps; `hvd.DistributedOptimizer` averages the gradients
with allreduce before each update. Rank 0 alone writes the model directory:
checkpoints, TensorBoard summaries and results.json. `grep -n "Horovod:"`
lists every distributed touch point.
"""

from absl import flags
import horovod.tensorflow as hvd
import tensorflow.compat.v1 as tf

from flags import define_trainer_flags
from legacy_hvd import cli
from legacy_hvd import devices
from legacy_hvd import faults
from legacy_hvd import graph_trainer
from legacy_hvd import heldout
from legacy_hvd import hooks
from legacy_hvd import migration
from legacy_hvd import model
from legacy_hvd import no_horovod
from legacy_hvd import numerics
from legacy_hvd import results
from legacy_hvd import scoring
from legacy_hvd import startup
from legacy_hvd import trainer
from legacy_hvd.config import Config
from legacy_hvd.signals import StopSignals
from legacy_hvd.world import Ranks


def train(config, data, ranks, stop_signals, horovod=hvd):
  """Builds the graph, trains, evaluates; returns the summary dict (all ranks).

  A stop signal ends the process instead, before the session closes, once
  rank 0 has saved a checkpoint at the step where all ranks stopped
  (exit_stopped). `horovod`: Horovod's
  API, or legacy_hvd.no_horovod's stand-ins for one process (--nohorovod).
  """
  plan = trainer.Plan.of(config, len(data.train_labels), ranks.size)
  global_step = tf.train.get_or_create_global_step()
  train_images = tf.placeholder(tf.uint8, data.train_images.shape)
  train_labels = tf.placeholder(tf.int32, data.train_labels.shape)
  # On resume, the input continues where the interrupted run stopped.
  skip_examples = tf.placeholder_with_default(tf.constant(0, tf.int64), [])
  dataset = trainer.batches(config, train_images, train_labels, ranks,
                            skip_examples)
  iterator = tf.data.make_initializable_iterator(dataset)
  images, labels = iterator.get_next()

  step = graph_trainer.build_step(config, plan, global_step, images, labels,
                                  horovod)
  params = step.params

  # Horovod: the evaluation's allreduce and the weight check's allgather are
  # built now, before MonitoredTrainingSession finalizes the graph.
  test_set = scoring.Evaluation(
      data.test_images.shape, params, num_shards=ranks.size,
      shard_index=ranks.rank,
      sum_fn=lambda counts: horovod.allreduce(counts, op=horovod.Sum))
  all_digests = horovod.allgather(step.digest[None])
  stop_flag, any_stop = graph_trainer.stop_request(ranks.size, horovod)

  def score(session):
    return test_set.run(session, data.test_images, data.test_labels)

  def finish(session):
    return score(session), session.run(all_digests).tolist()

  progress, step_log = trainer.progress_and_step_log(config, plan, ranks)
  rank0 = ranks.rank == 0
  stop, progress_hook = graph_trainer.step_hooks(
      step, stop_signals, stop_flag, any_stop, progress, step_log,
      summary_dir=config.model_dir if rank0 else None)
  final = hooks.FinalHook(finish, skip_if=lambda: stop.stopped)
  held_out = heldout.HeldOut(config.eval_every_n_steps, plan.max_steps,
                             ranks.rank, config.model_dir, step_log)
  train_hooks = [
      # Horovod: all ranks stop at the same global step.
      tf.train.StopAtStepHook(last_step=plan.max_steps),
      hooks.IteratorInitializerHook(
          iterator.initializer,
          lambda session: {
              train_images: data.train_images,
              train_labels: data.train_labels,
              skip_examples: session.run(global_step) * config.batch_size}),
      stop,
      progress_hook,
      final,
  ]
  if held_out.every_n_steps:
    # Horovod: every rank scores its test shard after the same steps; the
    # counts are summed (the Evaluation's allreduce, built above).
    train_hooks.insert(train_hooks.index(progress_hook) + 1,
                       hooks.EvaluationHook(
                           held_out, score, lambda: progress.last_step,
                           skip_if=lambda: stop.stopped))
  # Horovod: after a stop, every rank exits before the session's close,
  # which waits on Horovod once another rank has exited (the hook's why).
  train_hooks.append(hooks.ExitOnStopHook(
      lambda: stop.stopped,
      lambda: exit_stopped(step_log, stop_signals, ranks.rank,
                           config.model_dir)))
  if config.horovod:
    # Horovod: start every rank from rank 0's variables: its fresh initial
    # values, or what it restored from the checkpoint. (Horovod's hook, or
    # ours on TF >= 2.16.)
    train_hooks.insert(0, hooks.BroadcastGlobalVariablesHook(0))
  scaffold = tf.train.Scaffold()
  # Horovod: only rank 0 saves checkpoints and summaries, so other ranks
  # cannot corrupt them; it also restores from them when resuming.
  with tf.train.MonitoredTrainingSession(
      checkpoint_dir=config.model_dir if rank0 else None,
      scaffold=scaffold,
      chief_only_hooks=[hooks.checkpoint_saver(
          config.model_dir, config.save_checkpoints_steps,
          scaffold)] if rank0 else None,
      hooks=train_hooks,
      config=devices.session_config(),
      save_checkpoint_steps=None, save_checkpoint_secs=None,
      save_summaries_steps=config.log_every_n_steps,
      log_step_count_steps=None) as session:
    while not session.should_stop():
      try:
        session.run(step.step_after)
      except tf.errors.InvalidArgumentError as e:
        if not numerics.is_non_finite_gradient(e):
          raise
        faults.fail_diverged(progress)
  step_log.close()
  if stop.stopped:
    return None

  metrics, weight_digests = final.result
  held_out.record_final(progress.last_step, metrics)
  return dict(results.run_summary(metrics, weight_digests, progress,
                                  ranks.size, config.batch_size,
                                  plan.steps_per_epoch),
              **held_out.results())


def exit_stopped(step_log, stop_signals, rank, model_dir):
  """The end of a stopped run, from the session's last hook: rank 0's
  checkpoint is written; the step log closed, exits as the signal asks."""
  step_log.close()
  faults.exit_if_stopped(None, stop_signals, rank, model_dir)


def main(argv):
  del argv  # cli.parse_flags allows none
  config = Config.from_flags(flags.FLAGS)
  stop_signals = StopSignals().install()
  tf.disable_v2_behavior()
  data, own_threads = startup.before_horovod(config)
  # --nohorovod: the same graph in one process, on plain TensorFlow.
  horovod = hvd if config.horovod else no_horovod
  # Horovod: initialize Horovod (after the inputs are known to be usable, so
  # a bad path stops every rank before any of them waits on the others).
  horovod.init()
  ranks = Ranks.of(horovod)
  # Horovod: each rank's GPU (its local rank's), cores and thread pools.
  devices.place_graph_rank(config, ranks, own_threads)
  plan = trainer.Plan.of(config, len(data.train_labels), ranks.size)
  startup.check_on_rank0(
      ranks.rank, faults.model_dir_checks(
          config.model_dir, model.PARAM_SHAPES,
          # A TF2 trainer's checkpoint becomes this job's (rank 0).
          lambda: migration.to_tf1(config.model_dir, config.optimizer,
                                   trainer.rate_of(config, plan))),
      horovod.broadcast)
  watch = trainer.watch_hosts_and_log_start(
      config, data, ranks, graph_trainer.graph_allgather(horovod),
      "TF1 graph job")
  with faults.end_on_write_failure(config.model_dir, watch):
    try:
      summary = train(config, data, ranks, stop_signals, horovod)
    except tf.errors.OpError:
      # Horovod: a failed collective ends every rank; if a host was lost,
      # the first surviving rank names it in one line.
      if ranks.size == 1 or not watch.check():
        raise
    trainer.finish(summary, stop_signals, config, data, ranks.rank, "tf1")


def run():
  """Console-script entry point (legacy-hvd-train)."""
  cli.run(main, [define_trainer_flags])


if __name__ == "__main__":
  run()
