"""Session hooks of the TF1 trainer, one small hook per concern.

    IteratorInitializerHook(iterator.initializer, feed_fn)   # in-memory data
    ProgressHook(progress, fetches, summary_dir, step_log, digest)
    FinalHook(fn)                             # runs fn(session) before close

Every hook takes its ops ready-made from the graph builder, so
MonitoredTrainingSession can finalize the graph after the hooks' `begin()`.
"""
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
  """Feeds every step's scalars to a progress.Progress (and a StepLog).

  `fetches` maps names to scalar tensors: "global_step" (its value after
  the step's update), "loss" and "learning_rate" at least. They are fetched every step (scalars: cheap) so
  the final loss is known. When Progress logs, images/sec also goes to
  TensorBoard (given `summary_dir`) and the weight digest to the step log.
  """

  def __init__(self, progress, fetches, summary_dir=None, step_log=None,
               digest=None):
    self._progress = progress
    self._fetches = fetches
    self._summary_dir = summary_dir
    self._step_log = step_log
    self._digest = digest

  def after_create_session(self, session, coord):
    self._progress.start(int(session.run(tf.train.get_global_step())))

  def before_run(self, run_context):
    return tf.train.SessionRunArgs(self._fetches)

  def after_run(self, run_context, run_values):
    values = dict(run_values.results)
    step = int(values.pop("global_step"))
    rate = self._progress.record(step, values)
    if self._step_log:
      digest = (run_context.session.run(self._digest)
                if rate is not None and self._digest is not None else None)
      self._step_log.write(step, values["loss"], values["learning_rate"],
                           digest)
    if rate is not None and self._summary_dir:
      writer = tf.summary.FileWriterCache.get(self._summary_dir)
      writer.add_summary(tf.Summary(value=[tf.Summary.Value(
          tag="images_per_sec", simple_value=rate)]), step)


class FinalHook(tf.train.SessionRunHook):
  """Calls fn(session) once when training ends normally, before the close.

  Every rank runs its FinalHook at the same point, so fn may run collectives.
  """

  def __init__(self, fn):
    self._fn = fn
    self.result = None

  def end(self, session):
    self.result = self._fn(session)
