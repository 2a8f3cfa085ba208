"""Keras callbacks of the fit trainer, one per concern, in their one order
(in_order). The step is the optimizer's `iterations` (the global step,
checkpointed with it), read once and counted (StepCallback)."""
import tensorflow.compat.v2 as tf


class StepCallback(tf.keras.callbacks.Callback):
  """`current`: the step, read at the start and counted after each batch (a
  read of a strategy's mirrored variable costs up to 6 % of a step)."""

  def on_train_begin(self, logs=None):
    self.current = int(self.model.optimizer.iterations.numpy())

  def on_train_batch_end(self, batch, logs=None):
    self.current += 1


class ProgressCallback(tf.keras.callbacks.Callback):
  """Hands every step's own values to `report` (keras_cnn.batch_metrics'
  step_loss and step_accuracy, not Keras's running means of the epoch)."""

  def __init__(self, report, learning_rate, step):
    super().__init__()
    self._report = report
    self._learning_rate = learning_rate
    self._step = step

  def on_train_begin(self, logs=None):
    self._report.begin(self._step.current)

  def on_train_batch_end(self, batch, logs=None):
    step = self._step.current
    self._report.after_step(step, {
        "loss": logs["step_loss"], "accuracy": logs["step_accuracy"],
        # the rate this step applied: a function of the step before
        "learning_rate": float(self._learning_rate(step - 1))})

  def on_train_end(self, logs=None):
    self._report.close()


class StopCallback(tf.keras.callbacks.Callback):
  """Stops every rank at the same step: at `last_step`, or once any rank got
  a stop signal (a three-float allreduce every step)."""

  def __init__(self, runtime, last_step, step):
    super().__init__()
    self._runtime = runtime
    self._last_step = last_step
    self._step = step
    self.stopped = False

  def on_train_batch_end(self, batch, logs=None):
    if self._runtime.agreed(self._runtime.agree_to_stop(
        self._runtime.stop_requested())):
      self.stopped = True
    if self.stopped or self._step.current >= self._last_step:
      self.model.stop_training = True


class EvaluationCallback(tf.keras.callbacks.Callback):
  """Scores the test set when due, on every rank after the same steps; after
  the StopCallback, so a step where the ranks agreed to stop is not."""

  def __init__(self, report, stop, step):
    super().__init__()
    self._report = report
    self._stop = stop
    self._step = step

  def on_train_batch_end(self, batch, logs=None):
    if not self._stop.stopped:
      self._report.evaluate_if_due(self._step.current)


class CheckpointCallback(tf.keras.callbacks.Callback):
  """Rank 0: saves every `every_n_steps` steps and where training ends."""

  def __init__(self, checkpoints, every_n_steps, step):
    super().__init__()
    self._checkpoints = checkpoints
    self._every_n = every_n_steps
    self._step = step

  def on_train_batch_end(self, batch, logs=None):
    self._checkpoints.save_every(self._step.current, self._every_n)

  def on_train_end(self, logs=None):
    self._checkpoints.save_at_end(self._step.current)


class ExitOnStopCallback(tf.keras.callbacks.Callback):
  """Once the ranks agreed to stop, every rank exits in on_train_end: after
  rank 0's CheckpointCallback saved the stop's step, before fit closes its
  input."""

  def __init__(self, runtime, stop):
    super().__init__()
    self._runtime = runtime
    self._stop = stop

  def on_train_end(self, logs=None):
    self._runtime.exit_on_stop(self._stop.stopped)


class BroadcastGlobalVariablesCallback(tf.keras.callbacks.Callback):
  """Horovod's BroadcastGlobalVariablesCallback where Horovod's own fails:
  on TF 1.15 with v2 behaviour it calls Variable.ref(), a TF 2 method
  (keras_compat.VARIABLE_REF). The same broadcast, after the first batch."""

  def __init__(self, root_rank):
    super().__init__()
    # Here, not at the top: train_mwms_keras, without Horovod, uses the rest.
    import horovod.tensorflow as hvd  # pylint: disable=import-outside-toplevel
    self._hvd = hvd
    self._root_rank = root_rank
    self._done = False

  def on_batch_end(self, batch, logs=None):
    if not self._done:
      # Horovod: rank 0's weights and optimizer state everywhere.
      self._hvd.broadcast_variables(self.model.variables, self._root_rank)
      # (`weights`: Horovod's `variables()` returns values on TF 1.15.)
      self._hvd.broadcast_variables(self.model.optimizer.weights,
                                    self._root_rank)
      self._done = True


def in_order(runtime, report, learning_rate, checkpoints, save_every, first,
             last):
  """The fit's callbacks in their one working order (eager_job.Runtime's
  fit_arguments says which)."""
  step = StepCallback()
  stop = StopCallback(runtime, runtime.plan.max_steps, step)
  callbacks = list(first) + [step, ProgressCallback(report, learning_rate,
                                                    step),
                             stop, EvaluationCallback(report, stop, step)]
  if checkpoints:
    callbacks.append(CheckpointCallback(checkpoints, save_every, step))
  return callbacks + list(last) + [ExitOnStopCallback(runtime, stop)]
