"""Session hooks of the TF1 trainer, one small hook per concern.

    IteratorInitializerHook(iterator.initializer, feed_fn)   # feeds in-memory data
    ProgressHook(fetches, every_n_steps, global_batch, summary_dir)  # rank 0
    FinalHook(fn)                                # runs fn(session) before close

Every hook builds its ops (if any) in `begin()` or takes them ready-made, so
MonitoredTrainingSession can finalize the graph after the hooks' `begin()`.
"""
import time

from absl import logging
import tensorflow.compat.v1 as tf


class IteratorInitializerHook(tf.train.SessionRunHook):
  """Initializes a dataset iterator from placeholders when a session starts.

  Runs again whenever MonitoredSession recreates its session after an error,
  so the input never silently stays uninitialized.
  """

  def __init__(self, initializer, feed_fn):
    self._initializer = initializer
    self._feed_fn = feed_fn

  def after_create_session(self, session, coord):
    session.run(self._initializer, self._feed_fn())


class ProgressHook(tf.train.SessionRunHook):
  """Logs step, loss, accuracy, learning rate and images/sec; keeps totals.

  `fetches` maps names to scalar tensors and must hold "global_step" and
  "loss". Every step's values are fetched (scalars, so this is cheap) so the
  final loss is known; every `every_n_steps` they are logged and, given a
  `summary_dir`, images/sec goes to TensorBoard beside the graph summaries.
  """

  def __init__(self, fetches, every_n_steps, global_batch, summary_dir=None,
               log=True):
    self._fetches = fetches
    self._every_n = every_n_steps
    self._global_batch = global_batch
    self._summary_dir = summary_dir
    self._log = log
    self.start_step = None
    self.last_values = {}
    self._steps = 0
    self._first_step_time = self._last_step_time = None

  def after_create_session(self, session, coord):
    self.start_step = int(session.run(self._fetches["global_step"]))
    self._window = (self.start_step, time.perf_counter())
    if self._log and self.start_step:
      logging.info("Resuming from global step %d", self.start_step)

  def before_run(self, run_context):
    return tf.train.SessionRunArgs(self._fetches)

  def after_run(self, run_context, run_values):
    now = time.perf_counter()
    self.last_values = run_values.results
    self._steps += 1
    self._last_step_time = now
    if self._first_step_time is None:
      # The first step builds kernels and fills buffers: timing starts after.
      self._first_step_time = now
    step = int(self.last_values["global_step"])
    if step % self._every_n:
      return
    window_step, window_time = self._window
    rate = (step - window_step) * self._global_batch / (now - window_time)
    self._window = (step, now)
    if self._log:
      logging.info("step %d: " + ", ".join(f"{k} %.4g" for k in
                                           self._reported()) + ", %.0f images/sec",
                   step, *[self.last_values[k] for k in self._reported()], rate)
    if self._summary_dir:
      writer = tf.summary.FileWriterCache.get(self._summary_dir)
      writer.add_summary(tf.Summary(value=[tf.Summary.Value(
          tag="images_per_sec", simple_value=rate)]), step)

  def _reported(self):
    return [k for k in self._fetches if k != "global_step"]

  def images_per_sec(self):
    """Mean global images/sec after the first step; None if too few steps."""
    if self._steps < 2:
      return None
    elapsed = self._last_step_time - self._first_step_time
    return (self._steps - 1) * self._global_batch / elapsed


class FinalHook(tf.train.SessionRunHook):
  """Calls fn(session) once when training ends normally, before the close.

  Every rank runs its FinalHook at the same point, so fn may run collectives.
  """

  def __init__(self, fn):
    self._fn = fn
    self.result = None

  def end(self, session):
    self.result = self._fn(session)
