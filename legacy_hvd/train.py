"""Horovod data-parallel training of the CIFAR-10 CNN as a static TF1 graph.

    horovodrun -np 4 python -m legacy_hvd.train --batch_size=64

Every rank builds the same graph, reads its own shard of the data and runs
the same number of steps; `hvd.DistributedOptimizer` averages the gradients
with allreduce before each update. Rank 0 alone writes the model directory:
checkpoints, TensorBoard summaries and results.json. `grep -n "Horovod:"`
lists every distributed touch point, in order. What the runtime adds (the
model directory's checks, the stop agreement, the lost-host watch, failed
steps and writes, evaluation, the final scores) is graph_job.Runtime's.
"""

from absl import flags
import horovod.tensorflow
import tensorflow.compat.v1 as tf

from flags import define_trainer_flags
from legacy_hvd.checkpoints import resume
from legacy_hvd.common import cli
from legacy_hvd.common.config import Config
from legacy_hvd.common.signals import StopSignals
from legacy_hvd.model import cnn
from legacy_hvd.model import optimizers
from legacy_hvd.rank import devices
from legacy_hvd.training import hooks
from legacy_hvd.collectives import horovod_collectives
from legacy_hvd.collectives import no_horovod
from legacy_hvd.rank import startup
from legacy_hvd.rank.world import Ranks
from legacy_hvd.training import graph_job
from legacy_hvd.training import job


def train(config, data, plan, session_config, runtime, hvd):
  """Builds the graph and trains, the runtime's hooks beside the job's.
  `hvd`: Horovod's API, or no_horovod's stand-ins (--nohorovod)."""
  global_step = tf.train.get_or_create_global_step()
  train_images = tf.placeholder(tf.uint8, data.train_images.shape)
  train_labels = tf.placeholder(tf.int32, data.train_labels.shape)
  # On resume, the input continues where the interrupted run stopped.
  skip_examples = tf.placeholder_with_default(tf.constant(0, tf.int64), [])
  # Horovod: each rank reads its own shard of the training set.
  dataset = job.batches(config, train_images, train_labels,
                        hvd.size(), hvd.rank(), skip_examples)
  iterator = tf.data.make_initializable_iterator(dataset)
  images, labels = iterator.get_next()

  params = cnn.create_variables(config.seed)
  loss, accuracy = cnn.loss_and_accuracy(cnn.forward(images, params),
                                         labels)
  # Horovod: the learning rate scaled with the number of workers
  # (--lr_scaling of hvd.size(): job.Plan), warming up.
  learning_rate = plan.lr_schedule.rate(global_step)
  # Horovod: average gradients over all ranks with allreduce before updating.
  optimizer = hvd.DistributedOptimizer(
      optimizers.v1(config.optimizer, learning_rate, config.adam_epsilon),
      compression=job.compression(config, hvd),
      backward_passes_per_step=config.backward_passes_per_step,
      average_aggregated_gradients=True)
  step = graph_job.build_step(optimizer, params, loss, accuracy,
                              learning_rate, global_step)

  # Horovod: start every rank from rank 0's variables: its fresh initial
  # values, or what it restored from the checkpoint; first, so the hooks
  # after it read rank 0's global step. (Horovod's hook, or hooks.py's on
  # TF >= 2.16; alone, --nohorovod has nothing to broadcast.)
  broadcast = [hooks.BroadcastGlobalVariablesHook(0)] if config.horovod else []
  train_hooks = broadcast + [
      # Horovod: all ranks stop at the same global step.
      tf.train.StopAtStepHook(last_step=plan.max_steps),
      hooks.IteratorInitializerHook(
          iterator.initializer,
          lambda session: {
              train_images: data.train_images,
              train_labels: data.train_labels,
              skip_examples: session.run(global_step) * config.batch_size}),
  ] + runtime.session_hooks(step)   # the stop, progress, evaluation, end
  # Horovod: only rank 0 saves checkpoints and summaries, so other ranks
  # cannot corrupt them; it also restores from them when resuming.
  checkpoint_dir = config.model_dir if hvd.rank() == 0 else None
  # The checkpoints named relative to the model directory, so that it
  # resumes wherever it is moved, copied or mounted.
  scaffold = tf.train.Scaffold(saver=resume.relative_saver())
  # Horovod: the session, with the one ConfigProto (this rank's GPU): rank
  # 0 restores its checkpoint, then the broadcast hook runs.
  with tf.train.MonitoredTrainingSession(
      checkpoint_dir=checkpoint_dir,
      scaffold=scaffold,
      chief_only_hooks=[hooks.checkpoint_saver(
          config.model_dir, config.save_checkpoints_steps,
          scaffold)] if hvd.rank() == 0 else None,
      hooks=train_hooks,
      config=session_config,
      save_checkpoint_steps=None, save_checkpoint_secs=None,
      save_summaries_steps=config.log_every_n_steps,
      log_step_count_steps=None) as session:
    while not session.should_stop():
      session.run(step.step_after)


def main(argv):
  del argv  # cli.parse_flags allows none
  config = Config.from_flags(flags.FLAGS)
  stop_signals = StopSignals().install()
  tf.disable_v2_behavior()
  data, own_threads = startup.before_horovod(config)
  # --nohorovod: the same graph in one process, on plain TensorFlow.
  hvd = horovod.tensorflow if config.horovod else no_horovod
  # Horovod: the runtime's collectives (its checks' verdict, the roster, the
  # stop agreement, the test-set sums, the weights' check).
  collectives = (horovod_collectives.GraphCollectives() if config.horovod
                 else no_horovod.Collectives())
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
  with graph_job.start(config, data, ranks, plan, stop_signals, collectives,
                       "TF1 graph job") as runtime:
    train(config, data, plan, session_config, runtime, hvd)
    # Horovod: rank 0 alone writes results.json.
    runtime.finish("tf1")


def run():
  """Console-script entry point (legacy-hvd-train)."""
  cli.run(main, [define_trainer_flags])


if __name__ == "__main__":
  run()
