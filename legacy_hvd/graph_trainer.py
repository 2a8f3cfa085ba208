"""What the two TF1 graph trainers share: the MonitoredTrainingSession job
(legacy_hvd.train) and the Estimator job (legacy_hvd.train_estimator).

    step = build_step(config, plan, global_step, images, labels, horovod)
    stop_flag, any_stop = stop_request(size, horovod)
    step_hooks(step, stop_signals, stop_flag, any_stop, progress, step_log,
               summary_dir)                    # [StopRequestHook, ProgressHook]
    roster = trainer.gather_roster(rank, graph_allgather(horovod))

One function builds the training step's graph for both, so the two jobs run
the same ops on the same batches: their checkpoints hold the same variable
names and their losses can be compared bit for bit (tools/compare_paths.py).
"""
import collections

import tensorflow.compat.v1 as tf

from legacy_hvd import devices
from legacy_hvd import hooks
from legacy_hvd import model
from legacy_hvd import numerics
from legacy_hvd import optimizers
from legacy_hvd import trainer

Step = collections.namedtuple(
    "Step", "params loss accuracy learning_rate train_op step_after digest")


def build_step(config, plan, global_step, images, labels, horovod):
  """The model, its loss and one averaged update, as a Step of tensors.

  images: float32 [B, 32, 32, 3]; labels: int32 [B]. step_after is the
  global step's value after train_op's update; digest the weights' digest.
  `horovod`: Horovod's API, or legacy_hvd.no_horovod's stand-ins.
  """
  params = model.create_variables(config.seed)
  loss, accuracy = model.loss_and_accuracy(model.forward(images, params),
                                           labels)
  # Horovod: the learning rate scaled with the number of workers, warming up.
  learning_rate = trainer.rate_of(config, plan)(global_step)
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
  return Step(params, loss, accuracy, learning_rate, train_op, step_after,
              model.weight_digest(params))


def stop_request(size, horovod):
  """(float32 placeholder fed with this rank's stop request, its average
  over all ranks: > 0 on every rank in the same step once any rank asked)."""
  stop_flag = tf.placeholder_with_default(0.0, [])
  # Horovod: a stop request on any rank reaches all ranks in the same step
  # (a one-float allreduce with no inputs from the step, so it overlaps the
  # step's compute; alone, a rank needs no agreement and no trip through
  # Horovod's loop).
  any_stop = (horovod.allreduce(stop_flag, op=horovod.Average)
              if size > 1 else stop_flag)
  return stop_flag, any_stop


def step_hooks(step, stop_signals, stop_flag, any_stop, progress, step_log,
               summary_dir):
  """[StopRequestHook, ProgressHook]: every step's stop agreement and
  progress (summary_dir: rank 0's model_dir, None on the others)."""
  return [
      hooks.StopRequestHook(stop_signals, stop_flag, any_stop),
      hooks.ProgressHook(
          progress, {"global_step": step.step_after, "loss": step.loss,
                     "accuracy": step.accuracy,
                     "learning_rate": step.learning_rate},
          summary_dir=summary_dir, step_log=step_log, digest=step.digest),
  ]


def graph_allgather(horovod):
  """uint8 row [n] -> every rank's rows [size, n], in a session of its own."""
  def allgather(row):
    with tf.Graph().as_default(), tf.Session(
        config=devices.session_config()) as session:
      mine = tf.placeholder(tf.uint8, row.shape)
      # Horovod: every rank's row, in rank order.
      return session.run(horovod.allgather(mine[None]), {mine: row})
  return allgather


def broadcast_from_rank0(value, horovod):
  """Rank 0's int `value` on every rank, in a session of its own."""
  with tf.Graph().as_default(), tf.Session(
      config=devices.session_config()) as session:
    # Horovod: every rank gets rank 0's value.
    return int(session.run(horovod.broadcast(
        tf.constant(value, tf.int64), root_rank=0)))
