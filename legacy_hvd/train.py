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
from legacy_hvd import hooks
from legacy_hvd import model
from legacy_hvd import no_horovod
from legacy_hvd import numerics
from legacy_hvd import optimizers
from legacy_hvd import results
from legacy_hvd import schedule
from legacy_hvd import scoring
from legacy_hvd import startup
from legacy_hvd import trainer
from legacy_hvd.config import Config
from legacy_hvd.signals import StopSignals
from legacy_hvd.world import Ranks


def train(config, data, ranks, stop_signals, horovod=hvd):
  """Builds the graph, trains, evaluates; returns the summary dict (all ranks).

  Returns None when a stop signal ended training early (rank 0 has saved a
  checkpoint at the step where all ranks stopped). `horovod`: Horovod's
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

  params = model.create_variables(config.seed)
  loss, accuracy = model.loss_and_accuracy(model.forward(images, params),
                                           labels)
  # Horovod: the learning rate scaled with the number of workers, warming up.
  learning_rate = schedule.learning_rate(global_step, config.lr,
                                         plan.lr_scale, plan.warmup_steps)
  optimizer = optimizers.v1(config.optimizer, learning_rate,
                            config.adam_epsilon)
  # Horovod: average gradients over all ranks with allreduce before updating.
  optimizer = horovod.DistributedOptimizer(
      optimizer, compression=trainer.compression(config, horovod),
      backward_passes_per_step=config.backward_passes_per_step,
      average_aggregated_gradients=True)
  grads_and_vars = optimizer.compute_gradients(loss)
  # The averaged gradients are the same on every rank: checking them stops
  # all ranks in the same step, before a NaN or Inf reaches the weights.
  train_op = optimizer.apply_gradients(
      [(numerics.checked(g), v) for g, v in grads_and_vars],
      global_step=global_step)
  with tf.control_dependencies([train_op]):
    # The step this run ended at; a plain read might see it before or after
    # the increment.
    step_after = global_step.read_value()
  for name, value in (("loss", loss), ("accuracy", accuracy),
                      ("learning_rate", learning_rate)):
    tf.summary.scalar(name, value)

  # Horovod: the evaluation's allreduce and the weight check's allgather are
  # built now, before MonitoredTrainingSession finalizes the graph.
  test_set = scoring.Evaluation(
      data.test_images.shape, params, num_shards=ranks.size,
      shard_index=ranks.rank,
      sum_fn=lambda counts: horovod.allreduce(counts, op=horovod.Sum))
  digest = model.weight_digest(params)
  all_digests = horovod.allgather(digest[None])
  stop_flag = tf.placeholder_with_default(0.0, [])
  # Horovod: a stop request on any rank reaches all ranks in the same step
  # (a one-float allreduce with no inputs from the step, so it overlaps the
  # step's compute; alone, a rank needs no agreement and no trip through
  # Horovod's loop).
  any_stop = (horovod.allreduce(stop_flag, op=horovod.Average)
              if ranks.size > 1 else stop_flag)

  def finish(session):
    return (test_set.run(session, data.test_images, data.test_labels),
            session.run(all_digests).tolist())

  progress, step_log = trainer.progress_and_step_log(config, plan, ranks)
  rank0 = ranks.rank == 0
  stop = hooks.StopRequestHook(stop_signals, stop_flag, any_stop)
  final = hooks.FinalHook(finish, skip_if=lambda: stop.stopped)
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
      hooks.ProgressHook(
          progress, {"global_step": step_after, "loss": loss,
                     "accuracy": accuracy, "learning_rate": learning_rate},
          summary_dir=config.model_dir if rank0 else None,
          step_log=step_log, digest=digest),
      final,
  ]
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
        session.run(step_after)
      except tf.errors.InvalidArgumentError as e:
        if not numerics.is_non_finite_gradient(e):
          raise
        faults.fail_diverged(progress)
  step_log.close()
  if stop.stopped:
    return None

  metrics, weight_digests = final.result
  return results.run_summary(metrics, weight_digests, progress, ranks.size,
                             config.batch_size, plan.steps_per_epoch)


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
  startup.check_on_rank0(
      ranks.rank, faults.model_dir_checks(config.model_dir,
                                          model.PARAM_SHAPES),
      horovod.broadcast)
  roster = trainer.gather_roster(ranks.rank, graph_allgather(horovod))
  watch = faults.watch_lost_hosts(roster, ranks.rank, ranks.size,
                                  config.model_dir)
  if ranks.rank == 0:
    trainer.log_start(config, data, ranks.size, roster, "TF1 graph job")
  try:
    summary = train(config, data, ranks, stop_signals, horovod)
  except tf.errors.OpError:
    # Horovod: a failed collective ends every rank; if a host was lost, the
    # first surviving rank names it in one line.
    if ranks.size == 1 or not watch.check():
      raise
  trainer.finish(summary, stop_signals, config, data, ranks.rank, "tf1")


def graph_allgather(horovod):
  """uint8 row [n] -> every rank's rows [size, n], in a session of its own."""
  def allgather(row):
    with tf.Graph().as_default(), tf.Session(
        config=devices.session_config()) as session:
      mine = tf.placeholder(tf.uint8, row.shape)
      # Horovod: every rank's row, in rank order.
      return session.run(horovod.allgather(mine[None]), {mine: row})
  return allgather


def run():
  """Console-script entry point (legacy-hvd-train)."""
  cli.run(main, [define_trainer_flags])


if __name__ == "__main__":
  run()
