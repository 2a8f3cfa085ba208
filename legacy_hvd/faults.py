"""The TF1 job's fault handling, for the eager TF2 variants (loop and fit);
legacy_hvd.train shares the gradient check, its line and the lost-host line.

    faults.check_model_dir_on_rank0(rank, model_dir)   # after hvd.init()
    watch = faults.watch_lost_hosts(rank, size, model_dir)
    any_stop = faults.agree_on_stop(stop_signals, size)   # every step
    gradients = faults.checked(gradients)   # before they are applied
    try: train(...)
    except tf.errors.OpError as e: faults.end_on_error(e, progress, size, watch)
    faults.exit_if_stopped(summary, stop_signals, rank, model_dir)

The same behaviour and messages as legacy_hvd.train, whose hooks and
session do the same in a graph: a stop request (SIGTERM/SIGINT, see
signals.py) reaches every rank in the same step through a one-float
allreduce and rank 0 checkpoints there; NaN or Inf averaged gradients stop
every rank before they are applied, in one line naming the step; rank 0
checks the model directory and falls back from a damaged checkpoint before
any rank trains; a failed collective names the lost host (peers.py).
TF2 checkpoints are object-based: their variables are stored under
`conv1_weights/.ATTRIBUTES/VARIABLE_VALUE` rather than `conv1/weights`.
"""
import os
import sys

from absl import logging
import horovod.tensorflow as hvd
import tensorflow.compat.v2 as tf

from legacy_hvd import checkpoints
from legacy_hvd import cli
from legacy_hvd import model
from legacy_hvd import peers
from legacy_hvd import signals
from legacy_hvd import startup

NON_FINITE_GRADIENT = "non-finite averaged gradient"


def checkpoint_key(name):
  """'conv1/weights' -> the key of its value in a TF2 object checkpoint."""
  return name.replace("/", "_") + "/.ATTRIBUTES/VARIABLE_VALUE"


def check_model_dir_on_rank0(rank, model_dir):
  """Rank 0 makes the directory, proves it writable and picks an intact
  checkpoint to resume from; every rank exits together if it cannot."""
  def checks():
    startup.prepare_model_dir(model_dir)
    checkpoints.prepare_resume(model_dir, {
        checkpoint_key(name): shape
        for name, shape in model.PARAM_SHAPES.items()})
  startup.check_on_rank0_eagerly(rank, checks)


def agree_on_stop(stop_signals, size):
  """float32 scalar, > 0 on every rank in the same step once any rank got a
  stop signal. Eager, or inside a tf.function (pass `requested` then)."""
  requested = tf.constant(1.0 if stop_signals.requested else 0.0)
  return agree(requested, size)


def agree(requested, size):
  if size == 1:   # alone, a rank needs no agreement
    return requested
  # Horovod: a stop request on any rank reaches all ranks in the same step.
  return hvd.allreduce(requested, op=hvd.Average)


def checked(gradient):
  """The averaged gradient, or InvalidArgumentError if it holds NaN/Inf.

  Averaged gradients are the same on every rank, so every rank stops in
  the same step, before anything is applied."""
  return tf.debugging.check_numerics(gradient, NON_FINITE_GRADIENT)


def fail_diverged(progress):
  """The one line when checked() stopped a step (every rank in the same)."""
  cli.fail(f"training diverged at step {progress.last_step + 1}: the "
           "averaged gradients hold NaN or Inf (last loss "
           f"{progress.last_values.get('loss')}); stopped before "
           "applying them, the last checkpoint is untouched")


def end_on_error(error, progress, size, watch):
  """After a failed step: the divergence line, or the lost host's line
  (peers.LossWatch ends the rank), else re-raises `error`."""
  if NON_FINITE_GRADIENT in getattr(error, "message", ""):
    fail_diverged(progress)
  # Horovod: a failed collective ends every rank; if a host was lost, the
  # first surviving rank names it in one line.
  if size == 1 or not watch.check():
    raise error


def watch_lost_hosts(rank, size, model_dir):
  """Gathers where every rank runs and starts peers.LossWatch (np > 1)."""
  roster = peers.Roster.listen(rank)
  # Horovod: every rank learns where every other rank runs.
  roster.gather(lambda row: hvd.allgather(tf.constant(row[None])).numpy())
  watch = peers.LossWatch(
      roster, lambda lost: report_lost_peers(roster, lost, rank, model_dir),
      cli.LOST_PEER, cli.REPORTER_HEAD_START, stand_down=cli.exiting)
  if size > 1:
    watch.start()
  return watch


def report_lost_peers(roster, lost, rank, model_dir):
  """The first surviving rank: one line naming the lost host(s), rank 0's
  last checkpoint and how to resume (the same line as legacy_hvd.train's)."""
  # A host where some rank still answers is up: it keeps all its slots (a
  # rank of it that ended died of the loss or of its own fault, not of
  # its host's).
  remaining = ",".join(
      f"{host}:{len(ranks)}" for host, ranks in roster.hosts().items()
      if any(r not in lost for r in ranks))
  if rank == 0:
    step = latest_step(model_dir)
    saved = (f"rank 0's last checkpoint is step {step} in {model_dir}"
             if step else "rank 0 has saved no checkpoint yet")
  else:
    saved = (f"rank 0's last checkpoint is in {model_dir} on "
             f"{roster.ranks[0][0]}")
  print(cli.error_line(
      f"lost {roster.describe(lost)}; the job stops. {saved}; relaunch on "
      f"the remaining hosts (-H {remaining}) to resume"), file=sys.stderr,
        flush=True)


def latest_step(model_dir):
  """The step of the newest checkpoint in `model_dir` (ckpt-<step>), or 0."""
  path = (tf.train.latest_checkpoint(model_dir) if os.path.isdir(model_dir)
          else None)
  return int(path.rsplit("-", 1)[1]) if path else 0


def exit_if_stopped(summary, stop_signals, rank, model_dir):
  """After train(): when a stop signal ended training (summary None), rank 0
  says where it saved, and every rank exits as the signal asks."""
  if summary is not None:
    return
  if rank == 0:
    logging.info("Stopped by signal %d at step %d; the checkpoint in %s is "
                 "current: run the same command to resume",
                 stop_signals.requested, latest_step(model_dir), model_dir)
  sys.exit(signals.StopSignals.exit_code(stop_signals.requested))
