"""What the eager TF2 trainers share: the runtime around their steps or fit.
Collectives go through the trainer's `collectives`, Horovod's or the
strategy's: this module never imports Horovod."""
import atexit
import contextlib
import math

import tensorflow.compat.v2 as tf

from legacy_hvd.checkpoints import migration
from legacy_hvd.common import results
from legacy_hvd.model import cnn
from legacy_hvd.model import scoring
from legacy_hvd.training import periodic_eval
from legacy_hvd.collectives import stop_agreement
from legacy_hvd.training import job
from legacy_hvd.training import job_faults

# At its exit, the longest the chief of a tf.distribute job waits for the
# other workers to exit (closing their input takes seconds; a worker that
# did not report an error waits cli.REPORTER_HEAD_START).
CHIEF_WAIT_SECONDS = 30


def start(config, data, ranks, stop_signals, trainer_name, collectives):
  """Between placement and the model: rank 0's model-directory checks, the
  lost-host watch, the world line; the Runtime the trainer goes through,
  `with` it: in the block a failed write or step ends the job in one line."""
  job_faults.check_model_dir(
      ranks.rank, collectives, config.model_dir,
      job_faults.tf2_checkpoint_shapes(),
      lambda: migration.check(config.model_dir, config.optimizer,
                              migration.TF2))
  watch = job.watch_hosts_and_log_start(config, data, ranks, collectives,
                                        trainer_name)
  if ranks.rank == 0 and collectives.chief_exits_last:
    # tf.distribute: the chief holds the coordination service the others
    # heartbeat to; a worker still exiting when it is gone logs errors. At
    # its exit, after training or an error, it waits for theirs.
    atexit.register(watch.wait_others_gone, CHIEF_WAIT_SECONDS)
  return Runtime(config, data, ranks, stop_signals, watch, collectives)


class Runtime:
  """What the runtime adds around an eager trainer's steps or fit."""

  def __init__(self, config, data, ranks, stop_signals, watch, collectives):
    self.plan = job.Plan.of(config, len(data.train_labels), ranks.size)
    self._config = config
    self._data = data
    self._ranks = ranks
    self._stop_signals = stop_signals
    self._watch = watch   # loss_watch.LossWatch
    self._collectives = collectives
    self._report = self._start = None   # steps()' or fit_arguments()'
    self._guard = None

  def __enter__(self):
    self._guard = self._ending()
    self._guard.__enter__()
    return self

  def __exit__(self, kind, error, traceback):
    return self._guard.__exit__(kind, error, traceback)

  @contextlib.contextmanager
  def _ending(self):
    """A failed write or step ends this rank in one line, else raises."""
    with job_faults.end_on_write_failure(self._config.model_dir, self._watch):
      try:
        yield
      # A failed collective shows where its result is read (a distributed
      # input's next batch is one too: do all workers have one?).
      except tf.errors.OpError as e:
        job_faults.end_on_error(e, self._report and self._report.progress,
                                self._ranks.size, self._watch)

  def stop_requested(self):
    """float32 [3]: this rank's stop request (StopSignals.request)."""
    return tf.constant(self._stop_signals.request())

  def agree_to_stop(self, requested):
    """The ranks' requests averaged: a collective of every step."""
    return stop_agreement.agree(requested, self._ranks.size,
                                self._collectives.average)

  def agreed(self, agreement):
    """Whether the ranks agreed to stop (`agreement`: their requests summed
    or averaged); the signal they stop for is recorded for the exit."""
    return self._stop_signals.agree(agreement.numpy())

  def exit_on_stop(self, stopped):
    """After the ranks agreed to stop and rank 0 saved: every rank exits now,
    its input still open: closing a tf.data iterator waits for its threads
    (4.5 s measured), and horovodrun kills a rank 5 s after its signal."""
    if stopped:
      self._end(None, None)

  def finish(self, path_name):
    """The end: the final scores; rank 0 writes results.json."""
    if self._report.progress.last_step is None:
      # A finished run again: no step ran (nor fit's callbacks).
      self._report.begin(self._start)
    self._end(self._report.final_summary(), path_name)

  def _end(self, summary, path_name):
    # The ranks meet once more before they exit: the launchers end every
    # rank once one exits non-zero, rank 0 maybe before it has saved.
    wait = (lambda: self._collectives.average(tf.constant(0.0),
                                              name="stopped")
            if self._ranks.size > 1 else None)
    job.finish(summary, self._stop_signals, self._config, self._data,
               self._ranks.rank, path_name, wait)

  def steps(self, train_step, dataset, step, params, checkpoints):
    """Runs `train_step` to the plan's last step with the runtime's
    bookkeeping. train_step(images, labels, first_step, stop_requested) ->
    (loss, accuracy, learning rate, any_stop: the ranks' stop requests
    summed or averaged), `step` + 1 (counted: a read costs 3-6 %);
    checkpoints: rank 0's."""
    start = int(step.numpy())
    report = self._reporting(lambda images: cnn.forward(images, params),
                             params, start)
    report.begin(start)
    stopped = False
    # Held open past the loop (exit_on_stop says why).
    batches = iter(dataset)
    for current in range(start + 1, self.plan.max_steps + 1):
      images, labels = next(batches)
      loss, accuracy, rate, any_stop = train_step(
          images, labels, current == start + 1, self.stop_requested())
      stopped = self.agreed(any_stop)
      report.after_step(current, {"loss": loss.numpy(),
                                  "accuracy": accuracy.numpy(),
                                  "learning_rate": rate.numpy()})
      if checkpoints:
        checkpoints.save_every(current, self._config.save_checkpoints_steps)
      if stopped:
        break
      report.evaluate_if_due(current)
    report.close()
    if checkpoints:
      checkpoints.save_at_end(int(step.numpy()))
    self.exit_on_stop(stopped)

  def fit_arguments(self, net, params, learning_rate, checkpoints, first,
                    last):
    """model.fit's callbacks (the trainer's `first`, the runtime's, its
    `last`, the exit after a stop) and epochs, to the plan's last step."""
    # Not at the top: it loads tf.keras and Horovod, which the loops need not.
    from legacy_hvd.training import keras_callbacks  # pylint: disable=import-outside-toplevel
    start = int(net.optimizer.iterations.numpy())
    report = self._reporting(net, params, start)
    per_epoch = self.plan.steps_per_epoch
    first_epoch = start // per_epoch
    # A finished run again runs no epoch, nor callback (TensorBoard's writer).
    return dict(
        callbacks=keras_callbacks.in_order(
            self, report, learning_rate, checkpoints,
            self._config.save_checkpoints_steps, first, last)
        if start < self.plan.max_steps else [],
        # Keras epochs of steps_per_epoch steps over the endless stream;
        # the StopCallback ends every rank at max_steps itself.
        steps_per_epoch=per_epoch, initial_epoch=first_epoch,
        epochs=first_epoch + max(0, math.ceil(
            (self.plan.max_steps - start) / per_epoch)))

  def _reporting(self, forward, params, start):
    self._report = Reporting(self._config, self._data, self._ranks,
                             self.plan, forward, params, self._collectives)
    self._start = start
    return self._report


class Reporting:
  """After each step, every rank alike: progress, the step log, TensorBoard
  (rank 0), the evaluations; at the end, the final scores and digests.
  forward: float32 images [N, 32, 32, 3] -> logits [N, 10]."""

  def __init__(self, config, data, ranks, plan, forward, params,
               collectives):
    self.progress, self._step_log = job.progress_and_step_log(
        config, plan, ranks)
    self._test_set = scoring.EagerEvaluation(
        forward, data.test_images, data.test_labels, ranks.size, ranks.rank,
        collectives.sum)
    self._held_out = periodic_eval.HeldOut(
        config.eval_every_n_steps, plan.max_steps, ranks.rank,
        config.model_dir, self._step_log)
    self._writer = (tf.summary.create_file_writer(config.model_dir)
                    if ranks.rank == 0 else None)
    self._params = params
    self._collectives = collectives
    self._config, self._plan, self._size = config, plan, ranks.size

  def begin(self, step):
    self.progress.start(step)

  def after_step(self, step, values):
    """values: the step's own {"loss", "accuracy", "learning_rate"}."""
    speed = self.progress.record(step, values)
    digest = None
    if speed is not None:
      digest = cnn.weight_digest(self._params).numpy()
      if self._writer:
        with self._writer.as_default():
          for name, value in dict(values, images_per_sec=speed).items():
            tf.summary.scalar(name, value, step=step)
    self._step_log.write(step, values["loss"], values["learning_rate"],
                         digest)

  def evaluate_if_due(self, step):
    """Every rank after the same steps: the test set scored, when due."""
    if self._held_out.due(step):
      self._held_out.record(step, self._test_set.run())

  def close(self):
    self._step_log.close()
    if self._writer:
      self._writer.flush()

  def final_summary(self):
    """Every rank: the final scores and weight digests, results.json's."""
    metrics = self._test_set.run()
    self._held_out.record_final(self.progress.last_step, metrics)
    # Gather every rank's weight digest to check they stayed in sync.
    digests = self._collectives.allgather(
        cnn.weight_digest(self._params)[None]).numpy().tolist()
    return dict(results.run_summary(
        metrics, digests, self.progress, self._size, self._config.batch_size,
        self._plan.steps_per_epoch), **self._held_out.results())
