"""Session hooks of the TF1 trainers, one small hook per concern, their ops
built by `begin()`, so MonitoredTrainingSession can finalize the graph."""
import horovod.tensorflow as hvd
import tensorflow.compat.v1 as tf

from legacy_hvd.collectives import stop_agreement


class _BroadcastGlobalVariablesHook(tf.train.SessionRunHook):
  """Horovod's own hook, which Horovod 0.28.1 defines only when it finds
  `tf.estimator` (gone in TF 2.16): the broadcast is built in begin(), before
  the graph is finalized, and run after the chief restored any checkpoint."""

  def __init__(self, root_rank, device=""):
    self.root_rank = root_rank
    self.device = device
    self._broadcast = None

  def begin(self):
    if self._broadcast is None or (self._broadcast.graph
                                   is not tf.get_default_graph()):
      with tf.device(self.device):
        self._broadcast = hvd.broadcast_global_variables(self.root_rank)

  def after_create_session(self, session, coord):
    session.run(self._broadcast)


BroadcastGlobalVariablesHook = getattr(hvd, "BroadcastGlobalVariablesHook",
                                       _BroadcastGlobalVariablesHook)


class IteratorInitializerHook(tf.train.SessionRunHook):
  """Initializes a dataset iterator from placeholders when a session starts,
  again when MonitoredSession recreates it after an error."""

  def __init__(self, initializer, feed_fn):
    self._initializer = initializer
    self._feed_fn = feed_fn

  def after_create_session(self, session, coord):
    session.run(self._initializer, self._feed_fn(session))


class ArrayInput(tf.train.SessionRunHook):
  """An Estimator input_fn over numpy arrays, and the hook that feeds them
  through placeholders: as constants, every graph Estimator builds would copy
  them (a GraphDef holds at most 2 GB). On resume it skips global step x
  examples_per_step examples (rank 0's step: after the broadcast hook)."""

  def __init__(self, images, labels, make_dataset, examples_per_step=0):
    self._arrays = (images, labels)
    self._make_dataset = make_dataset
    self._examples_per_step = examples_per_step
    self._feeds = self._initializer = None

  def __call__(self):
    images = tf.placeholder(tf.uint8, self._arrays[0].shape)
    labels = tf.placeholder(tf.int32, self._arrays[1].shape)
    skip_examples = tf.placeholder_with_default(tf.constant(0, tf.int64), [])
    iterator = tf.data.make_initializable_iterator(
        self._make_dataset(images, labels, skip_examples))
    self._feeds = (images, labels, skip_examples)
    self._initializer = iterator.initializer
    return iterator.get_next()

  def after_create_session(self, session, coord):
    images, labels, skip_examples = self._feeds
    step = session.run(tf.train.get_global_step())
    session.run(self._initializer, {
        images: self._arrays[0], labels: self._arrays[1],
        skip_examples: step * self._examples_per_step})


class ProgressHook(tf.train.SessionRunHook):
  """Feeds every step's `fetches` to a progress.Progress and StepLog, packed
  into one float64 vector (exact for float32 and steps below 2**53): each
  fetched tensor costs the session's Python a little every step."""

  def __init__(self, progress, fetches, summary_dir=None, step_log=None,
               digest=None):
    self._progress = progress
    self._fetches = fetches
    self._summary_dir = summary_dir
    self._step_log = step_log
    self._digest = digest
    self._packed = None

  def begin(self):
    self._packed = tf.stack([tf.cast(value, tf.float64)
                             for value in self._fetches.values()])

  def after_create_session(self, session, coord):
    self._progress.start(int(session.run(tf.train.get_global_step())))

  def before_run(self, run_context):
    return tf.train.SessionRunArgs(self._packed)

  def after_run(self, run_context, run_values):
    values = dict(zip(self._fetches, run_values.results))
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


class StopRequestHook(tf.train.SessionRunHook):
  """Stops every rank at the same step once any rank was asked to stop
  (stop_agreement.agree). Fed every step: fed only on a request, np=2 hung in
  step 2, when rank 0's fetches changed after its first summaries (an unfed
  placeholder_with_default is a constant Grappler may fold, collective and
  all)."""

  def __init__(self, stop_signals, size, average):
    self._stop_signals = stop_signals
    self._size = size
    self._average = average
    self._flag = self._any_flag = None
    self.stopped = False

  def begin(self):
    kinds = len(self._stop_signals.AGREEMENT_ORDER)
    self._flag = tf.placeholder_with_default([0.0] * kinds, [kinds])
    self._any_flag = stop_agreement.agree(self._flag, self._size,
                                          self._average)

  def before_run(self, run_context):
    return tf.train.SessionRunArgs(
        self._any_flag,
        feed_dict={self._flag: self._stop_signals.request()})

  def after_run(self, run_context, run_values):
    if self._stop_signals.agree(run_values.results):
      self.stopped = True
      run_context.request_stop()


def checkpoint_saver(model_dir, every_n_steps, scaffold):
  """The CheckpointSaverHook MonitoredTrainingSession would add, told that a
  session.run is one step: since TF 2.4 it otherwise reads the global step in
  a second session.run after every step (docs/performance.md)."""
  hook = tf.train.CheckpointSaverHook(model_dir, save_steps=every_n_steps,
                                      scaffold=scaffold)
  hook._set_steps_per_run(1)  # pylint: disable=protected-access
  return hook


class EvaluationHook(tf.train.SessionRunHook):
  """Scores the test set after the steps `held_out` says are due, on every
  rank alike, so `evaluate` may run collectives; current_step() reads the
  ProgressHook's step (no extra fetch). Skipped once skip_if()."""

  def __init__(self, held_out, evaluate, current_step, skip_if):
    self._held_out = held_out
    self._evaluate = evaluate
    self._current_step = current_step
    self._skip_if = skip_if

  def after_run(self, run_context, run_values):
    step = self._current_step()
    if self._held_out.due(step) and not self._skip_if():
      self._held_out.record(step, self._evaluate(run_context.session))


class FinalHook(tf.train.SessionRunHook):
  """Calls fn(session) once when training ends normally, before the close, on
  every rank alike (fn may run collectives); skipped once skip_if()."""

  def __init__(self, fn, skip_if=lambda: False):
    self._fn = fn
    self._skip_if = skip_if
    self.result = None

  def end(self, session):
    if not self._skip_if():
      self.result = self._fn(session)


class ExitOnStopHook(tf.train.SessionRunHook):
  """Calls exit() in end() once a stop was agreed: after the hooks before it
  (rank 0's saver writes the stop's checkpoint in its end()), before the
  session's close, which, once a rank has gone, waits out a Gloo time-out or
  more, time a scheduler's warning or its KillWait cannot spare."""

  def __init__(self, stopped, exit_fn):
    self._stopped = stopped
    self._exit = exit_fn

  def end(self, session):
    del session
    if self._stopped():
      self._exit()
