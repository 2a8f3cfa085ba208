"""Keras callbacks of the fit variant, one small callback per concern.

    ProgressCallback(progress, step_log, learning_rate, params, summary_dir)
    StopCallback(stop_signals, size, last_step)   # all ranks stop together
    EvaluationCallback(held_out, test_set, stop)   # every N steps, all ranks
    CheckpointCallback(manager, every_n_steps, saved_step)   # rank 0 only
    broadcast_global_variables_callback(root_rank)   # Horovod's, or on TF 1.15
                                                     # a stand-in

They are what hooks.py's hooks are to the TF1 job. The step is the
optimizer's `iterations` (the global step, checkpointed with it). Horovod's
own callbacks (BroadcastGlobalVariablesCallback, MetricAverageCallback) go
before these in the list: Keras calls callbacks in list order.
"""
import horovod.tensorflow as hvd
import horovod.tensorflow.keras as hvd_keras
import tensorflow.compat.v2 as tf

from legacy_hvd import compat
from legacy_hvd import faults
from legacy_hvd import model


def _step(keras_model):
  return int(keras_model.optimizer.iterations.numpy())


class ProgressCallback(tf.keras.callbacks.Callback):
  """Feeds every step's values to a progress.Progress and a StepLog; when
  Progress logs, writes them and images/sec to TensorBoard (rank 0).

  The values are the step's own (the step_loss and step_accuracy metrics of
  keras_model.batch_metrics), not Keras's running means of the epoch.
  """

  def __init__(self, progress, step_log, learning_rate, params,
               summary_dir=None):
    super().__init__()
    self.progress = progress
    self._step_log = step_log
    self._learning_rate = learning_rate
    self._params = params
    self._writer = (tf.summary.create_file_writer(summary_dir)
                    if summary_dir else None)

  def on_train_begin(self, logs=None):
    self.progress.start(_step(self.model))

  def on_train_batch_end(self, batch, logs=None):
    step = _step(self.model)
    values = {"loss": logs["step_loss"], "accuracy": logs["step_accuracy"],
              # the rate this step applied: a function of the step before
              "learning_rate": float(self._learning_rate(step - 1))}
    speed = self.progress.record(step, values)
    digest = None
    if speed is not None:
      digest = model.weight_digest(self._params).numpy()
      if self._writer:
        with self._writer.as_default():
          for name, value in dict(values, images_per_sec=speed).items():
            tf.summary.scalar(name, value, step=step)
    self._step_log.write(step, values["loss"], values["learning_rate"],
                         digest)

  def on_train_end(self, logs=None):
    self._step_log.close()
    if self._writer:
      self._writer.flush()


class StopCallback(tf.keras.callbacks.Callback):
  """Stops every rank at the same step: at `last_step`, or once any rank got
  a stop signal (faults.agree_on_stop: a one-float allreduce every step)."""

  def __init__(self, stop_signals, size, last_step):
    super().__init__()
    self._stop_signals = stop_signals
    self._size = size
    self._last_step = last_step
    self.stopped = False

  def on_train_batch_end(self, batch, logs=None):
    if faults.agree_on_stop(self._stop_signals, self._size).numpy() > 0:
      self.stopped = True
    if self.stopped or _step(self.model) >= self._last_step:
      self.model.stop_training = True


class EvaluationCallback(tf.keras.callbacks.Callback):
  """Scores the test set after the steps `held_out` (a heldout.HeldOut)
  says are due: held_out.record(step, test_set.run()).

  Every rank runs it after the same steps (test_set.run sums the counts
  with a collective); after the StopCallback `stop` in the list, so a step
  where the ranks agreed to stop is not evaluated. Added to fit only with
  --eval_every_n_steps.
  """

  def __init__(self, held_out, test_set, stop):
    super().__init__()
    self._held_out = held_out
    self._test_set = test_set
    self._stop = stop

  def on_train_batch_end(self, batch, logs=None):
    step = _step(self.model)
    if self._held_out.due(step) and not self._stop.stopped:
      self._held_out.record(step, self._test_set.run())


class CheckpointCallback(tf.keras.callbacks.Callback):
  """Rank 0: saves every `every_n_steps` steps and where training ends (at
  the last step, or where a stop signal stopped every rank)."""

  def __init__(self, manager, every_n_steps, saved_step):
    super().__init__()
    self._manager = manager
    self._every_n = every_n_steps
    self._saved_step = saved_step

  def on_train_batch_end(self, batch, logs=None):
    step = _step(self.model)
    if step % self._every_n == 0:
      self._save(step)

  def on_train_end(self, logs=None):
    step = _step(self.model)
    if step != self._saved_step:
      self._save(step)

  def _save(self, step):
    self._manager.save(checkpoint_number=step)
    self._saved_step = step


class _BroadcastGlobalVariablesCallback(tf.keras.callbacks.Callback):
  """Horovod's BroadcastGlobalVariablesCallback where Horovod's own fails:
  on TF 1.15 with v2 behaviour it calls Variable.ref(), a TF 2 method. The
  same broadcast at the same point: after the first batch, the model's and
  then the optimizer's variables."""

  def __init__(self, root_rank):
    super().__init__()
    self._root_rank = root_rank
    self._done = False

  def on_batch_end(self, batch, logs=None):
    if not self._done:
      # Horovod: rank 0's weights and optimizer state everywhere.
      hvd.broadcast_variables(self.model.variables, self._root_rank)
      # (`weights`: Horovod's `variables()` returns values on TF 1.15.)
      hvd.broadcast_variables(self.model.optimizer.weights, self._root_rank)
      self._done = True


def broadcast_global_variables_callback(root_rank):
  """Horovod's BroadcastGlobalVariablesCallback(root_rank), or its stand-in
  where Horovod's needs what this TensorFlow lacks (compat.VARIABLE_REF)."""
  if compat.VARIABLE_REF:
    return hvd_keras.callbacks.BroadcastGlobalVariablesCallback(root_rank)
  return _BroadcastGlobalVariablesCallback(root_rank)
