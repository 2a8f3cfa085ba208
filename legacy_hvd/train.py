"""Horovod data-parallel training of the CIFAR-10 CNN as a static TF1 graph.

    horovodrun -np 4 python -m legacy_hvd.train --batch_size=64

Every rank builds the same graph, reads its own shard of the data and runs
the same number of steps; `hvd.DistributedOptimizer` averages the gradients
with allreduce before each update. Rank 0 alone writes the model directory:
checkpoints, TensorBoard summaries and results.json. `grep -n "Horovod:"`
lists every distributed touch point.
"""

from absl import flags
from absl import logging
import horovod.tensorflow as hvd
import tensorflow.compat.v1 as tf

from flags import define_trainer_flags
from legacy_hvd import checkpoints
from legacy_hvd import cli
from legacy_hvd import evaluation
from legacy_hvd import faults
from legacy_hvd import hooks
from legacy_hvd import model
from legacy_hvd import no_horovod
from legacy_hvd import optimizers
from legacy_hvd import peers
from legacy_hvd import results
from legacy_hvd import runtime
from legacy_hvd import schedule
from legacy_hvd import startup
from legacy_hvd import world
from legacy_hvd.config import Config
from legacy_hvd.progress import Progress
from legacy_hvd.progress import StepLog
from legacy_hvd.data import pipeline
from legacy_hvd.signals import StopSignals


def session_config(placement, local_rank):
  session = tf.ConfigProto()
  # Horovod: pin each process to one GPU: the one numbered by its local rank.
  session.gpu_options.allow_growth = True
  session.gpu_options.visible_device_list = str(local_rank)
  # Thread pools as runtime.place_local_rank sized them for this rank.
  session.intra_op_parallelism_threads = placement.intra_op_threads
  session.inter_op_parallelism_threads = placement.inter_op_threads
  return session


def train(config, data, rank, size, tf_config, stop_signals):
  """Builds the graph, trains, evaluates; returns the summary dict (all ranks).

  Returns None when a stop signal ended training early (rank 0 has saved a
  checkpoint at the step where all ranks stopped).
  """
  steps_per_epoch = schedule.steps_per_epoch(len(data.train_labels),
                                             config.batch_size, size)
  max_steps = config.max_steps or config.epochs * steps_per_epoch

  global_step = tf.train.get_or_create_global_step()
  train_images = tf.placeholder(tf.uint8, data.train_images.shape)
  train_labels = tf.placeholder(tf.int32, data.train_labels.shape)
  # On resume, the input continues where the interrupted run stopped.
  skip_examples = tf.placeholder_with_default(tf.constant(0, tf.int64), [])
  if config.synthetic:
    dataset = pipeline.synthetic_batches(config.batch_size, config.seed)
  else:
    # Horovod: each rank reads its own shard of the training set.
    dataset = pipeline.train_batches(train_images, train_labels,
                                     config.batch_size, num_shards=size,
                                     shard_index=rank, seed=config.seed,
                                     augment=config.augment,
                                     skip_examples=skip_examples)
  iterator = tf.data.make_initializable_iterator(dataset)
  images, labels = iterator.get_next()

  params = model.create_variables(config.seed)
  loss, accuracy = model.loss_and_accuracy(model.forward(images, params),
                                           labels)
  # Horovod: scale the learning rate with the number of workers, warming up.
  learning_rate = schedule.learning_rate(
      global_step, config.lr, schedule.lr_scale(config.lr_scaling, size),
      warmup_steps=round(config.warmup_epochs * steps_per_epoch))
  optimizer = optimizers.v1(config.optimizer, learning_rate,
                            config.adam_epsilon)
  # Horovod: average gradients over all ranks with allreduce before updating.
  optimizer = hvd.DistributedOptimizer(
      optimizer,
      compression=(hvd.Compression.fp16 if config.fp16_allreduce
                   else hvd.Compression.none),
      backward_passes_per_step=config.backward_passes_per_step,
      average_aggregated_gradients=True)
  grads_and_vars = optimizer.compute_gradients(loss)
  # The averaged gradients are the same on every rank: checking them stops
  # all ranks in the same step, before a NaN or Inf reaches the weights.
  train_op = optimizer.apply_gradients(
      [(faults.checked(g), v) for g, v in grads_and_vars],
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
  test_set = evaluation.Evaluation(
      data.test_images.shape, params, num_shards=size, shard_index=rank,
      sum_fn=lambda counts: hvd.allreduce(counts, op=hvd.Sum))
  digest = model.weight_digest(params)
  all_digests = hvd.allgather(digest[None])
  stop_flag = tf.placeholder_with_default(0.0, [])
  # Horovod: a stop request on any rank reaches all ranks in the same step
  # (a one-float allreduce with no inputs from the step, so it overlaps the
  # step's compute; alone, a rank needs no agreement and no trip through
  # Horovod's loop).
  any_stop = (hvd.allreduce(stop_flag, op=hvd.Average) if size > 1
              else stop_flag)

  def finish(session):
    return (test_set.run(session, data.test_images, data.test_labels),
            session.run(all_digests).tolist())

  progress = Progress(config.log_every_n_steps, config.batch_size * size,
                      log=rank == 0, steps_per_epoch=steps_per_epoch,
                      last_step=max_steps)
  step_log = StepLog(config.step_log if rank == 0 else None)
  stop = hooks.StopRequestHook(stop_signals, stop_flag, any_stop)
  final = hooks.FinalHook(finish, skip_if=lambda: stop.stopped)
  train_hooks = [
      # Horovod: all ranks stop at the same global step.
      tf.train.StopAtStepHook(last_step=max_steps),
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
          summary_dir=config.model_dir if rank == 0 else None,
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
      checkpoint_dir=config.model_dir if rank == 0 else None,
      scaffold=scaffold,
      chief_only_hooks=[hooks.checkpoint_saver(
          config.model_dir, config.save_checkpoints_steps,
          scaffold)] if rank == 0 else None,
      hooks=train_hooks,
      config=tf_config,
      save_checkpoint_steps=None, save_checkpoint_secs=None,
      save_summaries_steps=config.log_every_n_steps,
      log_step_count_steps=None) as session:
    while not session.should_stop():
      try:
        session.run(step_after)
      except tf.errors.InvalidArgumentError as e:
        if faults.NON_FINITE_GRADIENT not in e.message:
          raise
        faults.fail_diverged(progress)
  step_log.close()
  if stop.stopped:
    return None

  metrics, weight_digests = final.result
  return results.run_summary(metrics, weight_digests, progress, size,
                             config.batch_size, steps_per_epoch)


def main(argv):
  del argv  # cli.parse_flags allows none
  config = Config.from_flags(flags.FLAGS)
  stop_signals = StopSignals().install()
  tf.disable_v2_behavior()
  data = startup.before_horovod(config)
  if not config.horovod:
    # Plain TensorFlow: the same graph, one process, no Horovod at all.
    global hvd
    hvd = no_horovod
  own_threads = runtime.threads()   # pinned below; Horovod's stay free
  # Horovod: initialize Horovod (after the inputs are known to be usable, so
  # a bad path stops every rank before any of them waits on the others).
  hvd.init()
  rank, size = hvd.rank(), hvd.size()
  # Horovod: on CPU the cores are what the local ranks share: pin each rank
  # to its own part and size its thread pools to it.
  placement = runtime.place_local_rank(
      hvd.local_rank(), hvd.local_size(), config.cpu_affinity,
      config.intra_op_threads, config.inter_op_threads, own_threads)
  tf_config = session_config(placement, hvd.local_rank())
  logging.info("%s", runtime.describe(
      placement, rank, hvd.local_rank(), hvd.local_size(),
      host=peers.host_name(), cross_rank=hvd.cross_rank(),
      cross_size=hvd.cross_size(),
      visible_device_list=tf_config.gpu_options.visible_device_list))

  def model_dir_checks():
    startup.prepare_model_dir(config.model_dir)
    checkpoints.prepare_resume(config.model_dir, model.PARAM_SHAPES)

  startup.check_on_rank0(rank, model_dir_checks, tf_config, hvd.broadcast)
  roster = gather_roster(rank, tf_config)
  watch = peers.LossWatch(
      roster, lambda lost: faults.report_lost_peers(roster, lost, rank,
                                                    config.model_dir),
      cli.LOST_PEER, cli.REPORTER_HEAD_START, stand_down=cli.exiting)
  if size > 1:
    watch.start()
  if rank == 0:
    logging.info("Training on %s: %d train, %d test images; %d workers",
                 data.source, len(data.train_labels), len(data.test_labels),
                 size)
    log_world(config, data, size, roster)
  try:
    summary = train(config, data, rank, size, tf_config, stop_signals)
  except tf.errors.OpError:
    # Horovod: a failed collective ends every rank; if a host was lost, the
    # first surviving rank names it in one line.
    if size == 1 or not watch.check():
      raise
  faults.exit_if_stopped(summary, stop_signals, rank, config.model_dir)
  if rank == 0:
    results.write_run_results(summary, config, data.source, "tf1")


def gather_roster(rank, tf_config):
  """Every rank's host and probe port (a peers.Roster), by one allgather."""
  roster = peers.Roster.listen(rank)
  with tf.Graph().as_default(), tf.Session(config=tf_config) as session:
    row = tf.placeholder(tf.uint8, [peers.ROW_BYTES])
    # Horovod: every rank learns where every other rank runs.
    rows = hvd.allgather(row[None])
    return roster.gather(lambda mine: session.run(rows, {row: mine}))


def log_world(config, data, size, roster):
  """Rank 0: what follows from the world size, and what changed since the
  checkpoint's run (a relaunch on fewer hosts)."""
  now = world.World(size, roster.hosts(), config.batch_size, config.lr,
                    config.lr_scaling, len(data.train_labels), config.epochs,
                    config.max_steps)
  logging.info("%s", world.describe(now))
  change = world.changes_since(now, world.read_previous(config.model_dir),
                               faults.latest_step(config.model_dir))
  if change:
    logging.warning("%s", change)
  world.write(config.model_dir, now, results.write_json)


def run():
  """Console-script entry point (legacy-hvd-train)."""
  define_trainer_flags()
  cli.run(main)


if __name__ == "__main__":
  run()
