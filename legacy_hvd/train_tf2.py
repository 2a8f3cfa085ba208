"""The TF2 twin of legacy_hvd.train: tf.function + hvd.DistributedGradientTape.

    horovodrun -np 4 python -m legacy_hvd.train_tf2 --batch_size=64 [--optimizer_impl=keras]

Same flags, data pipeline, model (same variables and initial values for the
same --seed), learning-rate scaling and warm-up, rank-0 logging and
results.json as the TF1 path, so the two can be compared step by step
(tools/compare_paths.py). Checkpoints are TF2 object-based ones, in their own
--model_dir. Runs on TF 2 and on TF 1.15 (with its v2 behaviour switched on,
compat.enable_v2_behavior). The TF1 job's fault handling, the same
behaviour and messages (legacy_hvd/faults.py): stop signals, NaN/Inf
gradients, model-dir checks, damaged checkpoints, a lost host, a failed
write in the model directory. What it
shares with the Keras fit variant is in legacy_hvd/eager_trainer.py.
`grep -n "Horovod:"` lists every distributed touch point.
"""

from absl import flags
import horovod.tensorflow as hvd
# The TF2 API on TF 2 and on TF 1.15 alike (with compat.enable_v2_behavior).
import tensorflow.compat.v2 as tf

from flags import define_trainer_flags
from flags import tf2 as tf2_flags
from legacy_hvd import cli
from legacy_hvd import compat
from legacy_hvd import eager_trainer
from legacy_hvd import faults
from legacy_hvd import model
from legacy_hvd import numerics
from legacy_hvd import optimizers
from legacy_hvd import startup
from legacy_hvd import trainer
from legacy_hvd.config import Config
from legacy_hvd.signals import StopSignals
from legacy_hvd.world import Ranks


def optimizer_variables(optimizer):
  # v1 optimizers have a variables() method, Keras ones a property.
  variables = optimizer.variables
  return list(variables() if callable(variables) else variables)


def train(config, data, ranks, stop_signals, watch):
  """Trains and evaluates eagerly; returns the summary dict (all ranks).

  Returns None when a stop signal ended training early (rank 0 has saved a
  checkpoint at the step where all ranks stopped).
  """
  plan = trainer.Plan.of(config, len(data.train_labels), ranks.size)
  params = {name: tf.Variable(model.initial_value(name, config.seed),
                              name=name)
            for name in model.PARAM_SHAPES}
  trainable = list(params.values())
  step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
  # Horovod: the learning rate scaled with the number of workers, warming up.
  rate_of = trainer.rate_of(config, plan)
  learning_rate = lambda: rate_of(step)
  make_optimizer = getattr(optimizers, config.optimizer_impl)
  optimizer = make_optimizer(config.optimizer, learning_rate,
                             config.adam_epsilon)
  compression = trainer.compression(config, hvd)
  manager, saved_step = eager_trainer.restore(config.model_dir, ranks.rank,
                                              step, optimizer, params, rate_of)
  # Horovod: start every rank from rank 0's weights and step (fresh or
  # restored). The optimizer's state is broadcast after the first step,
  # once it exists.
  hvd.broadcast_variables(trainable + [step], root_rank=0)

  @tf.function
  def train_step(images, labels, first_step, stop_requested):
    with tf.GradientTape() as tape:
      loss, accuracy = model.loss_and_accuracy(model.forward(images, params),
                                               labels)
    # Horovod: wrap the tape: gradient() averages over ranks with allreduce.
    tape = hvd.DistributedGradientTape(tape, compression=compression)
    # The averaged gradients are the same on every rank: checking them stops
    # all ranks in the same step, before a NaN or Inf reaches the weights.
    gradients = [numerics.checked(g) for g in tape.gradient(loss, trainable)]
    rate = learning_rate()
    if config.optimizer_impl == "v1":
      optimizer.apply_gradients(zip(gradients, trainable), global_step=step)
    else:
      optimizer.apply_gradients(zip(gradients, trainable))
      step.assign_add(1)
    if first_step:
      # Horovod: broadcast the now-built optimizer state (and weights again,
      # in case a restored rank 0 applied restored slots) from rank 0.
      hvd.broadcast_variables(trainable + optimizer_variables(optimizer),
                              root_rank=0)
    # Horovod: a stop request on any rank reaches all ranks in the same step
    # (a one-float allreduce that overlaps the step's compute).
    return loss, accuracy, rate, faults.agree(stop_requested, ranks.size)

  dataset = trainer.batches(config, data.train_images, data.train_labels,
                            ranks, int(step.numpy()) * config.batch_size)
  progress, step_log = trainer.progress_and_step_log(config, plan, ranks)
  test_set, held_out = eager_trainer.held_out_evaluation(
      lambda images: model.forward(images, params), data, ranks, plan, config,
      step_log)
  writer = (tf.summary.create_file_writer(config.model_dir)
            if ranks.rank == 0 else tf.summary.create_noop_writer())
  progress.start(int(step.numpy()))
  first, stopped = True, False
  with writer.as_default():
    # Every rank runs the same number of steps: they share `step`.
    batches = iter(dataset.take(max(0, plan.max_steps - int(step.numpy()))))
    while not stopped:
      try:
        images, labels = next(batches)
        loss, accuracy, rate, any_stop = train_step(
            images, labels, first,
            tf.constant(1.0 if stop_signals.requested else 0.0))
      except StopIteration:
        break
      except tf.errors.OpError as e:
        faults.end_on_error(e, progress, ranks.size, watch)
      first, stopped = False, any_stop.numpy() > 0
      current = int(step.numpy())
      values = {"loss": loss.numpy(), "accuracy": accuracy.numpy(),
                "learning_rate": rate.numpy()}
      speed = progress.record(current, values)
      digest = None
      if speed is not None:
        digest = model.weight_digest(params).numpy()
        for name, value in dict(values, images_per_sec=speed).items():
          tf.summary.scalar(name, value, step=current)
      step_log.write(current, values["loss"], values["learning_rate"], digest)
      if manager and current % config.save_checkpoints_steps == 0:
        manager.save(checkpoint_number=current)
        saved_step = current
      if held_out.due(current) and not stopped:
        # Horovod: every rank scores its test shard after the same step; the
        # counts are summed.
        held_out.record(current, test_set.run())
  step_log.close()
  writer.flush()
  if manager and saved_step != int(step.numpy()):
    manager.save(checkpoint_number=int(step.numpy()))
  if stopped:
    return None
  return eager_trainer.final_summary(test_set, held_out, params, ranks,
                                     progress, plan, config)


def main(argv):
  del argv
  compat.enable_v2_behavior()   # before any op: TF 1.15 starts in graph mode
  config = Config.from_flags(flags.FLAGS)
  stop_signals = StopSignals().install()
  data, own_threads = startup.before_horovod(config)
  # Horovod: initialize Horovod, once the inputs are known to be usable.
  hvd.init()
  ranks = Ranks.of(hvd)
  watch = eager_trainer.start(
      config, data, ranks, own_threads,
      f"TF2 loop ({config.optimizer_impl} optimizer)")
  with faults.end_on_write_failure(config.model_dir, watch):
    summary = train(config, data, ranks, stop_signals, watch)
    trainer.finish(summary, stop_signals, config, data, ranks.rank, "tf2")


def run():
  """Console-script entry point (legacy-hvd-train-tf2)."""
  cli.run(main, [define_trainer_flags, tf2_flags.define_tf2])


if __name__ == "__main__":
  run()
