"""Periodic held-out evaluation: when it is due (the same step on every
rank, as the counts are summed by a collective; never the last, which the
final evaluation scores), and where its numbers go: rank 0 writes the
`eval` run with the training run's tags, so TensorBoard draws one chart."""
import os

from absl import logging
import tensorflow.compat.v1 as tf
import tensorflow.compat.v2 as tf2

EVAL_RUN = "eval"   # TensorBoard run directory, inside model_dir


class HeldOut:

  def __init__(self, every_n_steps, last_step, rank, model_dir,
               step_log=None, write_summaries=True):
    self.every_n_steps = every_n_steps   # 0: only the final evaluation
    self._last_step = last_step
    self._rank0 = rank == 0
    self._summary_dir = os.path.join(model_dir, EVAL_RUN)
    self._step_log = step_log
    # False where the trainer writes the eval run itself (Estimator).
    self._summaries = write_summaries
    self._write_summaries = None
    self.history = []   # [{"step", "loss", "accuracy", "examples"}]

  def due(self, step):
    """Whether `step` (the global step just finished) is evaluated now."""
    return bool(self.every_n_steps) and (
        step % self.every_n_steps == 0 and step < self._last_step)

  def record(self, step, metrics):
    """Notes one evaluation; rank 0 logs it, to TensorBoard and the step log."""
    entry = {"step": int(step), "loss": metrics["test_loss"],
             "accuracy": metrics["test_accuracy"],
             "examples": metrics["test_examples"]}
    self.history.append(entry)
    if not self._rank0:
      return
    logging.info("step %d: test accuracy %.4f, test loss %.4g (%d images)",
                 step, entry["accuracy"], entry["loss"], entry["examples"])
    if self._summaries:
      if self._write_summaries is None:
        self._write_summaries = _summary_writer(self._summary_dir)
      self._write_summaries(step, {"loss": entry["loss"],
                                   "accuracy": entry["accuracy"]})
    if self._step_log is not None:
      self._step_log.write_evaluation(entry["step"], entry["loss"],
                                      entry["accuracy"], entry["examples"])

  def record_final(self, step, metrics):
    """The final evaluation, into the history when evaluating periodically."""
    if self.every_n_steps:
      self.record(step, metrics)

  def results(self):
    """results.json's fields: {"evaluations": the history, oldest first}."""
    return {"evaluations": list(self.history)}


def _summary_writer(logdir):
  """write(step, {tag: float}): TensorBoard scalars in `logdir`, flushed.
  A finalized graph takes no summary ops: Summary protos go through a
  FileWriter, which refuses to work eagerly, where the TF2 writer does."""
  if not tf.executing_eagerly():
    writer = tf.summary.FileWriter(logdir)   # without the graph

    def write(step, values):
      writer.add_summary(tf.Summary(value=[
          tf.Summary.Value(tag=tag, simple_value=value)
          for tag, value in values.items()]), step)
      writer.flush()
    return write

  writer = tf2.summary.create_file_writer(logdir)

  def write_eagerly(step, values):
    with writer.as_default():
      for tag, value in values.items():
        tf2.summary.scalar(tag, value, step=step)
    writer.flush()
  return write_eagerly
