"""Horovod data-parallel training of the CIFAR-10 CNN as a static TF1 graph.

    horovodrun -np 4 python -m legacy_hvd.train --batch_size=64

Every rank builds the same graph, reads its own shard of the data and runs
the same number of steps; `hvd.DistributedOptimizer` averages the gradients
with allreduce before each update. Rank 0 alone writes the model directory:
checkpoints, TensorBoard summaries and results.json. `grep -n "Horovod:"`
lists every distributed touch point.
"""
import os

from absl import flags
from absl import logging
import horovod
import horovod.tensorflow as hvd
import tensorflow.compat.v1 as tf

from flags import define_trainer_flags
from legacy_hvd import cli
from legacy_hvd import evaluation
from legacy_hvd import hooks
from legacy_hvd import model
from legacy_hvd import optimizers
from legacy_hvd import results
from legacy_hvd import runtime
from legacy_hvd import schedule
from legacy_hvd.config import Config
from legacy_hvd.progress import Progress
from legacy_hvd.progress import StepLog
from legacy_hvd.data import cifar10
from legacy_hvd.data import pipeline

def session_config(config, local_rank, local_size):
  session = tf.ConfigProto()
  # Horovod: pin each process to one GPU: the one numbered by its local rank.
  session.gpu_options.allow_growth = True
  session.gpu_options.visible_device_list = str(local_rank)
  # Horovod: on CPU the cores are what the local ranks share: give each its part.
  session.intra_op_parallelism_threads, session.inter_op_parallelism_threads = (
      runtime.cpu_threads(local_size, config.intra_op_threads,
                          config.inter_op_threads))
  return session


def train(config, data, rank, size, local_rank, local_size):
  """Builds the graph, trains, evaluates; returns the summary dict (all ranks)."""
  steps_per_epoch = schedule.steps_per_epoch(len(data.train_labels),
                                             config.batch_size, size)
  max_steps = config.max_steps or config.epochs * steps_per_epoch

  global_step = tf.train.get_or_create_global_step()
  train_images = tf.placeholder(tf.uint8, data.train_images.shape)
  train_labels = tf.placeholder(tf.int32, data.train_labels.shape)
  # Horovod: each rank reads its own shard of the training set.
  dataset = pipeline.train_batches(train_images, train_labels,
                                   config.batch_size, num_shards=size,
                                   shard_index=rank, seed=config.seed,
                                   augment=config.augment)
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
  train_op = optimizer.minimize(loss, global_step=global_step)
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

  def finish(session):
    return (test_set.run(session, data.test_images, data.test_labels),
            session.run(all_digests).tolist())

  progress = Progress(config.log_every_n_steps, config.batch_size * size,
                      log=rank == 0)
  step_log = StepLog(config.step_log if rank == 0 else None)
  final = hooks.FinalHook(finish)
  train_hooks = [
      # Horovod: start every rank from rank 0's variables: its fresh initial
      # values, or what it restored from the checkpoint.
      hvd.BroadcastGlobalVariablesHook(0),
      # Horovod: all ranks stop at the same global step.
      tf.train.StopAtStepHook(last_step=max_steps),
      hooks.IteratorInitializerHook(
          iterator.initializer,
          lambda: {train_images: data.train_images,
                   train_labels: data.train_labels}),
      hooks.ProgressHook(
          progress, {"global_step": step_after, "loss": loss,
                     "accuracy": accuracy, "learning_rate": learning_rate},
          summary_dir=config.model_dir if rank == 0 else None,
          step_log=step_log, digest=digest),
      final,
  ]
  # Horovod: only rank 0 saves checkpoints and summaries, so other ranks
  # cannot corrupt them; it also restores from them when resuming.
  with tf.train.MonitoredTrainingSession(
      checkpoint_dir=config.model_dir if rank == 0 else None,
      hooks=train_hooks,
      config=session_config(config, local_rank, local_size),
      save_checkpoint_steps=config.save_checkpoints_steps,
      save_summaries_steps=config.log_every_n_steps,
      log_step_count_steps=None) as session:
    while not session.should_stop():
      session.run(step_after)
  step_log.close()

  metrics, weight_digests = final.result
  return results.run_summary(metrics, weight_digests, progress, size,
                             config.batch_size, steps_per_epoch)


def check_model_dir(path):
  """Fails with one line unless `path` is, or can become, a writable directory."""
  if os.path.exists(path) and not os.path.isdir(path):
    cli.fail(f"--model_dir={path}: is a file; expected a directory")
  existing = path
  while not os.path.exists(existing):
    existing = os.path.dirname(os.path.abspath(existing))
  if not os.access(existing, os.W_OK | os.X_OK):
    cli.fail(f"--model_dir={path}: {existing} is not writable; expected a "
             "directory this user can write")


def main(argv):
  del argv  # cli.parse_flags allows none
  config = Config.from_flags(flags.FLAGS)
  tf.disable_v2_behavior()
  check_model_dir(config.model_dir)
  try:
    data = cifar10.load(config.data_dir)
  except cifar10.DataError as e:
    cli.fail(str(e))

  # Horovod: initialize Horovod (after the inputs are known to be usable, so
  # a bad path stops every rank before any of them waits on the others).
  hvd.init()
  rank, size = hvd.rank(), hvd.size()
  if rank == 0:
    logging.info("Training on %s: %d train, %d test images; %d workers",
                 data.source, len(data.train_labels), len(data.test_labels),
                 size)
  summary = train(config, data, rank, size, hvd.local_rank(), hvd.local_size())
  if rank == 0:
    summary.update({"data_source": data.source,
                    "tensorflow_version": tf.__version__,
                    "horovod_version": horovod.__version__,
                    "flags": config.as_dict()})
    path = results.write_json(
        os.path.join(config.model_dir, results.RESULTS_FILE), summary)
    logging.info("Test accuracy %.4f over %d images; results in %s",
                 summary["test_accuracy"], summary["test_examples"], path)
    if not summary["weights_in_sync"]:
      cli.fail("ranks ended with different weights; see weight_digests in "
               f"{path}")


def run():
  """Console-script entry point (legacy-hvd-train)."""
  define_trainer_flags()
  cli.run(main)


if __name__ == "__main__":
  run()
