"""Periodic held-out evaluation: when it is due, and where its numbers go.

    held_out = HeldOut(config.eval_every_n_steps, plan.max_steps, rank,
                       config.model_dir, step_log)   # progress.StepLog
    if held_out.due(step):               # the same answer on every rank
      held_out.record(step, test_set.run(...))   # scoring's metrics dict
    held_out.record_final(step, metrics)   # the final evaluation joins them
    summary = dict(summary, **held_out.results())   # results.json

The trainers decide how to score (scoring.Evaluation in a graph,
scoring.EagerEvaluation eagerly, Estimator.evaluate); every rank runs the
same evaluation at the same global step, since the counts are summed with a
collective. This module says at which steps (every --eval_every_n_steps,
never at the last step: the final evaluation is that one) and keeps the
history; rank 0 alone logs each evaluation, writes it to TensorBoard (the
`eval` run, <model_dir>/eval, beside the training summaries: `loss` and
`accuracy`, the tags the training run uses, so TensorBoard draws the two on
one chart) and appends it to the step log. Never imports Horovod.
"""
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
    """Notes one evaluation (metrics: scoring.metrics_from_counts); rank 0
    logs it and writes it to TensorBoard and the step log."""
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
    """The evaluation at the end joins the history when evaluating
    periodically (once at the end, it is results.json's test_* alone)."""
    if self.every_n_steps:
      self.record(step, metrics)

  def results(self):
    """results.json's fields: {"evaluations": the history, oldest first}."""
    return {"evaluations": list(self.history)}


def _summary_writer(logdir):
  """write(step, {tag: float}): TensorBoard scalars in `logdir`, flushed.

  A graph job's graph is finalized (no summary ops may be added): it writes
  Summary protos with a FileWriter. Eagerly, FileWriter refuses to work:
  there the TF2 writer writes them.
  """
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
