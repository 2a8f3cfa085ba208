"""What the TF1 graph trainers share: the step, built with the same calls in
the same order so their checkpoints hold the same names and their losses
compare bit for bit (tools/compare_paths.py), and the runtime around it,
through the trainer's collectives: this module never sees Horovod."""
import collections
import contextlib
import shutil

import tensorflow.compat.v1 as tf

from legacy_hvd.checkpoints import migration
from legacy_hvd.common import results
from legacy_hvd.model import cnn
from legacy_hvd.model import finite_gradients
from legacy_hvd.model import scoring
from legacy_hvd.training import hooks
from legacy_hvd.training import periodic_eval
from legacy_hvd.training import job
from legacy_hvd.training import job_faults

Step = collections.namedtuple(
    "Step", "params loss accuracy learning_rate train_op step_after digest")


def start(config, data, ranks, plan, stop_signals, collectives, trainer_name,
          held_out_summaries=True):
  """Rank 0's model-directory checks, their verdict shared; the Runtime,
  to run `with`. held_out_summaries: False where the trainer writes the
  eval run itself."""
  job_faults.check_model_dir(
      ranks.rank, collectives, config.model_dir, cnn.PARAM_SHAPES,
      # A TF2 trainer's checkpoint becomes this job's (rank 0).
      lambda: migration.to_tf1(config.model_dir, config.optimizer,
                               plan.lr_schedule))
  return Runtime(config, data, ranks, plan, stop_signals, collectives,
                 trainer_name, held_out_summaries)


def build_step(optimizer, params, loss, accuracy, learning_rate,
               global_step):
  """One update by `optimizer` (hvd.DistributedOptimizer's: gradients
  averaged over all ranks), checked, as a Step of tensors: float32 scalars,
  step_after the global step after the update, digest float64 [8]."""
  grads_and_vars = optimizer.compute_gradients(loss)
  # The averaged gradients are the same on every rank: checking them stops
  # all ranks in the same step, before a NaN or Inf reaches the weights.
  train_op = optimizer.apply_gradients(
      [(finite_gradients.checked(g), v) for g, v in grads_and_vars],
      global_step=global_step)
  with tf.control_dependencies([train_op]):
    # The step this run ended at; a plain read might see it before or after
    # the increment.
    step_after = global_step.read_value()
  for name, value in (("loss", loss), ("accuracy", accuracy),
                      ("learning_rate", learning_rate)):
    tf.summary.scalar(name, value)
  return Step(params, loss, accuracy, learning_rate, train_op, step_after,
              cnn.weight_digest(params))


class Runtime:
  """What the runtime adds to a graph job, its touch points aside."""

  def __init__(self, config, data, ranks, plan, stop_signals, collectives,
               trainer_name, held_out_summaries):
    self._config, self._data, self._ranks = config, data, ranks
    self._plan, self._stop_signals = plan, stop_signals
    self._collectives = collectives
    self._trainer_name = trainer_name
    self._held_out_summaries = held_out_summaries
    self.progress = self.step_log = self.held_out = None   # _watching()'s
    self._stop = self._final = self._evaluated = self._guard = None

  def __enter__(self):
    self._guard = self._watching(self._trainer_name)
    self._guard.__enter__()
    return self

  def __exit__(self, kind, error, traceback):
    return self._guard.__exit__(kind, error, traceback)

  @contextlib.contextmanager
  def _watching(self, trainer_name):
    """The lost-host watch; in the block a failed write or step ends the
    job in one line. Makes progress and held_out."""
    config, ranks = self._config, self._ranks
    watch = job.watch_hosts_and_log_start(
        config, self._data, ranks, self._collectives, trainer_name)
    with job_faults.end_on_write_failure(config.model_dir, watch):
      self.progress, self.step_log = job.progress_and_step_log(
          config, self._plan, ranks)
      self.held_out = periodic_eval.HeldOut(
          config.eval_every_n_steps, self._plan.max_steps, ranks.rank,
          config.model_dir, self.step_log,
          write_summaries=self._held_out_summaries)
      with job_faults.end_on_failed_step(self.progress, ranks.size, watch):
        yield

  @property
  def stopped(self):
    """Whether the ranks agreed to stop (a stop signal on any of them)."""
    return self._stop is not None and self._stop.stopped

  def _step_hooks(self, step):
    """The stop agreement and progress hooks, made again for each graph."""
    self._stop = hooks.StopRequestHook(self._stop_signals, self._ranks.size,
                                       self._collectives.average)
    return [
        self._stop,
        hooks.ProgressHook(
            self.progress, {"global_step": step.step_after, "loss": step.loss,
                            "accuracy": step.accuracy,
                            "learning_rate": step.learning_rate},
            summary_dir=(self._config.model_dir if self._ranks.rank == 0
                         else None),
            step_log=self.step_log, digest=step.digest),
    ]

  def session_hooks(self, step):
    """The MonitoredTrainingSession job's runtime hooks in their one working
    order, after the job's own: the step's, the evaluations, the final
    scores, and last the stop's exit."""
    collectives, data = self._collectives, self._data
    # Horovod: the evaluation's allreduce and the weight check's allgather
    # are built now, before MonitoredTrainingSession finalizes the graph.
    test_set = scoring.Evaluation(
        data.test_images.shape, step.params, num_shards=self._ranks.size,
        shard_index=self._ranks.rank, sum_fn=collectives.sum)
    all_digests = collectives.allgather(step.digest[None])

    def score(session):
      return test_set.run(session, data.test_images, data.test_labels)

    evaluation = [hooks.EvaluationHook(
        # Horovod: every rank scores its test shard after the same steps;
        # the counts are summed (the Evaluation's allreduce, built above).
        self.held_out, score, lambda: self.progress.last_step,
        skip_if=lambda: self.stopped)] if self.held_out.every_n_steps else []
    self._final = hooks.FinalHook(
        lambda session: (score(session), session.run(all_digests).tolist()),
        skip_if=lambda: self.stopped)
    return self._step_hooks(step) + evaluation + [self._final,
                                                  self._exit_on_stop_hook()]

  def estimator_hooks(self, step, chief_hooks, scratch_dir):
    """An EstimatorSpec's hooks in their one working order: the step's; the
    trainer's chief hooks, then the stop's exit (removes scratch_dir). Every
    rank is a chief (no TF_CONFIG): chief hooks end after training hooks."""
    return dict(training_hooks=self._step_hooks(step),
                training_chief_hooks=list(chief_hooks) + [
                    self._exit_on_stop_hook(scratch_dir)])

  def evaluated(self, step, metrics, weight_digests):
    """An Estimator's evaluation after `step`: held out when due, final."""
    if self.held_out.due(step):
      self.held_out.record(step, metrics)
    self._evaluated = metrics, weight_digests, step

  def _exit_on_stop_hook(self, scratch_dir=None):
    """The hook that ends every rank after a stop: last in the session's
    hooks (an Estimator's: its last chief hook). scratch_dir: this rank's,
    removed first (the exit skips the `with` that would remove it)."""

    def exit_now():
      if scratch_dir:
        shutil.rmtree(scratch_dir, ignore_errors=True)
      self._end(None)
    # Horovod: after a stop, every rank exits before the session's close,
    # which waits on Horovod once another rank has exited (the hook's why).
    return hooks.ExitOnStopHook(lambda: self.stopped, exit_now)

  def finish(self, path_name, **extra):
    """The end: the final scores (the session's or the last evaluated()),
    with `extra`; rank 0 writes results.json."""
    if self._evaluated:
      metrics, weight_digests, step = self._evaluated
    else:
      (metrics, weight_digests), step = (self._final.result,
                                         self.progress.last_step)
    self.step_log.close()
    self.held_out.record_final(step, metrics)
    summary = results.run_summary(
        metrics, weight_digests, self.progress, self._ranks.size,
        self._config.batch_size, self._plan.steps_per_epoch)
    self._end(dict(summary, **self.held_out.results(), **extra), path_name)

  def _end(self, summary, path_name=None):
    """Rank 0 writes results.json, or after a stop every rank exits."""
    self.step_log.close()
    job.finish(summary, self._stop_signals, self._config, self._data,
               self._ranks.rank, path_name)
