"""The TF2 twin of legacy_hvd.train: tf.function + hvd.DistributedGradientTape.

    horovodrun -np 4 python -m legacy_hvd.train_tf2 --batch_size=64 [--optimizer_impl=keras]

The TF1 job's flags, data, model, schedule, step log and results.json, so
the two compare step by step (tools/compare_paths.py); TF2 object
checkpoints. Runs on TF 2 and on TF 1.15 (compat.enable_v2_behavior).

Read as Horovod's tensorflow2_mnist.py: `grep -n "Horovod:"` lists every
distributed touch point, in order. The runtime around the loop (faults,
progress, checkpoints, evaluation, final scores) is training/eager_job.py's.
"""

from absl import flags
import horovod.tensorflow as hvd
# The TF2 API on TF 2 and on TF 1.15 alike (with compat.enable_v2_behavior).
import tensorflow.compat.v2 as tf

from flags import define_trainer_flags
from flags import tf2 as tf2_flags
from legacy_hvd.checkpoints import object_checkpoints
from legacy_hvd.common import cli
from legacy_hvd.common import compat
from legacy_hvd.common.config import Config
from legacy_hvd.common.signals import StopSignals
from legacy_hvd.model import cnn
from legacy_hvd.model import finite_gradients
from legacy_hvd.model import optimizers
from legacy_hvd.rank import devices
from legacy_hvd.collectives import horovod_collectives
from legacy_hvd.rank import startup
from legacy_hvd.rank.world import Ranks
from legacy_hvd.training import eager_job
from legacy_hvd.training import job


def main(argv):
  del argv
  compat.enable_v2_behavior()   # before any op: TF 1.15 starts in graph mode
  config = Config.from_flags(flags.FLAGS)
  stop_signals = StopSignals().install()
  data, own_threads = startup.before_horovod(config)
  # Horovod: initialize Horovod, once the inputs are known to be usable.
  hvd.init()
  ranks = Ranks.of(hvd)
  # Horovod: pin each process to one GPU: the one numbered by its local rank
  # (before the eager context starts; TF 1.15 has these names too).
  gpu = devices.local_gpu(config, ranks)   # None: a host without GPUs
  if gpu:
    tf.config.experimental.set_memory_growth(gpu, True)
    tf.config.experimental.set_visible_devices(gpu, "GPU")
  # Horovod: on CPU, the cores are what the local ranks share: each its
  # part, its thread pools sized to it.
  devices.place_eager_rank(config, ranks, own_threads)
  with eager_job.start(config, data, ranks, stop_signals,
                       f"TF2 loop ({config.optimizer_impl} optimizer)",
                       horovod_collectives.Collectives()) as runtime:
    train(config, data, ranks, runtime)
    # Horovod: the final scores on every rank; rank 0 alone writes
    # results.json.
    runtime.finish("tf2")


def train(config, data, ranks, runtime):
  """Trains eagerly through the runtime's loop. A stop signal ends the
  process there, once rank 0 saved the step where all ranks stopped."""
  plan = runtime.plan
  params = {name: tf.Variable(cnn.initial_value(name, config.seed),
                              name=name)
            for name in cnn.PARAM_SHAPES}
  trainable = list(params.values())
  step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
  # Horovod: the learning rate scaled with the number of workers (times
  # hvd.size() for --lr_scaling=linear), reached by a linear warm-up.
  lr_schedule = plan.lr_schedule   # job.Plan: the scale of ranks.size
  make_optimizer = getattr(optimizers, config.optimizer_impl)
  optimizer = make_optimizer(config.optimizer,
                             lambda: lr_schedule.rate(step),
                             config.adam_epsilon)
  # Horovod: only rank 0 writes checkpoints (the others would write over its
  # files); it resumes from its newest, the others from its values.
  checkpoints = (object_checkpoints.restore_newest(
      config.model_dir, step, optimizer, params, lr_schedule)
                 if ranks.rank == 0 else None)
  # Horovod: start every rank from rank 0's weights and step (fresh or
  # restored). The optimizer's state is broadcast after the first step,
  # once it exists.
  hvd.broadcast_variables(trainable + [step], root_rank=0)
  compression = job.compression(config, hvd)   # --fp16_allreduce

  @tf.function
  def train_step(images, labels, first_step, stop_requested):
    with tf.GradientTape() as tape:
      loss, accuracy = cnn.loss_and_accuracy(cnn.forward(images, params),
                                             labels)
    # Horovod: wrap the tape: gradient() averages over ranks with allreduce.
    tape = hvd.DistributedGradientTape(tape, compression=compression)
    # The averaged gradients are the same on every rank: checking them stops
    # all ranks in the same step, before a NaN or Inf reaches the weights.
    gradients = [finite_gradients.checked(g)
                 for g in tape.gradient(loss, trainable)]
    rate = lr_schedule.rate(step)
    if config.optimizer_impl == "v1":
      optimizer.apply_gradients(zip(gradients, trainable), global_step=step)
    else:
      optimizer.apply_gradients(zip(gradients, trainable))
      step.assign_add(1)
    if first_step:
      # Horovod: broadcast the now-built optimizer state (and weights again,
      # in case a restored rank 0 applied restored slots) from rank 0.
      hvd.broadcast_variables(trainable + optimizers.variables(optimizer),
                              root_rank=0)
    # Horovod: a stop request on any rank reaches all ranks in the same step
    # (a three-float allreduce, one per stop signal, that overlaps the
    # step's compute).
    any_stop = (hvd.allreduce(stop_requested, op=hvd.Average)
                if ranks.size > 1 else stop_requested)
    return loss, accuracy, rate, any_stop

  # Horovod: each rank reads its own shard of the training set.
  dataset = job.batches(config, data.train_images, data.train_labels,
                        ranks.size, ranks.rank,
                        int(step.numpy()) * config.batch_size)
  # Every rank runs the same number of steps: they share `step`.
  runtime.steps(train_step, dataset, step, params, checkpoints)



def run():
  """Console-script entry point (legacy-hvd-train-tf2)."""
  cli.run(main, [define_trainer_flags, tf2_flags.define_tf2])


if __name__ == "__main__":
  run()
