"""How every trainer meets faults: the same behaviour and the same lines.

    checks = faults.model_dir_checks(model_dir, shapes, migrate)   # rank 0
    watch = faults.watch_lost_hosts(roster, rank, size, model_dir)
    with faults.end_on_write_failure(model_dir, watch): ... train, finish
    any_stop = faults.agree_on_stop(stop_signals, size)   # every step (TF2)
    except tf.errors.OpError as e: faults.end_on_error(e, progress, size, watch)
    faults.exit_if_stopped(summary, stop_signals, rank, model_dir)

A stop request (SIGTERM/SIGINT, see signals.py) reaches every rank in the
same step through a one-float allreduce and rank 0 checkpoints there; NaN
or Inf averaged gradients (numerics.checked) stop every rank before they
are applied, in one line naming the step; rank 0 checks the model directory
and falls back from a damaged checkpoint before any rank trains; a failed
collective names the lost host (peers.py); a write that fails in the model
directory (a full disk, a read-only remount) ends the job in one line
naming the file and the cause, nothing half-written left
(write_faults.py). The TF1 job's hooks and session
do the same in a graph (hooks.StopRequestHook).
"""
import os
import sys

from absl import logging
import horovod.tensorflow as hvd
import tensorflow.compat.v2 as tf

from legacy_hvd import checkpoint_state
from legacy_hvd import checkpoints
from legacy_hvd import cli
from legacy_hvd import model
from legacy_hvd import numerics
from legacy_hvd import peers
from legacy_hvd import signals
from legacy_hvd import startup
from legacy_hvd import write_faults


def tf2_checkpoint_shapes():
  """model.PARAM_SHAPES by the keys of a TF2 object checkpoint."""
  return {checkpoints.tf2_key(name): shape
          for name, shape in model.PARAM_SHAPES.items()}


def model_dir_checks(model_dir, expected_shapes, migrate=None):
  """Rank 0's checks (for startup.check_on_rank0): makes the directory,
  proves it writable, picks an intact checkpoint to resume from and
  removes what a failed write left (saying so).
  migrate(): legacy_hvd.migration's check or conversion for this trainer,
  True when it took care of another trainer's checkpoint."""
  def checks():
    startup.prepare_model_dir(model_dir)
    if migrate is None or not migrate():
      checkpoints.prepare_resume(model_dir, expected_shapes)
    write_faults.log_removed_at_start(model_dir)
  return checks


def end_on_write_failure(model_dir, watch):
  """Around training and results: a write that fails ends this rank in one
  line naming the file and the cause (write_faults.end_on_failure)."""
  # Horovod: the other ranks, waiting in a collective for this one, are
  # told that it failed; they name it in one line and exit.
  return write_faults.end_on_failure(model_dir, watch.mark_failed)


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


def fail_diverged(progress):
  """The one line when numerics.checked stopped a step (every rank in the
  same)."""
  cli.fail(f"training diverged at step {progress.last_step + 1}: the "
           "averaged gradients hold NaN or Inf (last loss "
           f"{progress.last_values.get('loss')}); stopped before "
           "applying them, the last checkpoint is untouched")


def end_on_error(error, progress, size, watch):
  """After a failed step: the divergence line, or the lost host's line
  (peers.LossWatch ends the rank), else re-raises `error`."""
  if numerics.is_non_finite_gradient(error):
    fail_diverged(progress)
  # Horovod: a failed collective ends every rank; if a host was lost, the
  # first surviving rank names it in one line.
  if size == 1 or not watch.check():
    raise error


def watch_lost_hosts(roster, rank, size, model_dir):
  """Starts peers.LossWatch over the gathered `roster` (np > 1)."""
  watch = peers.LossWatch(
      roster, lambda lost: report_lost_peers(roster, lost, rank, model_dir),
      cli.LOST_PEER, cli.REPORTER_HEAD_START, stand_down=cli.exiting)
  if size > 1:
    watch.start()
  return watch


def report_lost_peers(roster, lost, rank, model_dir):
  """The first surviving rank: one line naming the lost host(s) or stuck or
  failed rank(s), rank 0's last checkpoint and how to resume (the same
  line as legacy_hvd.train's)."""
  # A host where some rank still answers is up: it keeps all its slots (a
  # rank of it that ended died of the loss or of its own fault, not of
  # its host's).
  remaining = ",".join(
      f"{host}:{len(ranks)}" for host, ranks in roster.hosts().items()
      if any(r not in lost for r in ranks))
  if rank == 0:
    step = checkpoint_state.latest_step(model_dir)
    saved = (f"rank 0's last checkpoint is step {step} in {model_dir}"
             if step else "rank 0 has saved no checkpoint yet")
  else:
    saved = (f"rank 0's last checkpoint is in {model_dir} on "
             f"{roster.ranks[0][0]}")
  if set(lost.values()) == {peers.FAILED}:   # an error, not a lost host
    line = (f"{roster.describe(lost)} (see its error); the job stops. "
            f"{saved}")
  else:
    line = (f"lost {roster.describe(lost)}; the job stops. {saved}; "
            f"relaunch on the remaining hosts (-H {remaining}) to resume")
  print(cli.error_line(line), file=sys.stderr, flush=True)


def exit_if_stopped(summary, stop_signals, rank, model_dir):
  """After train(): when a stop signal ended training (summary None), rank 0
  says where it saved, and every rank exits as the signal asks, at once.

  At once: horovodrun (and Slurm, after KillWait) kills a rank that is
  still exiting a few seconds after the signal, and the interpreter's own
  exit can take longer (the last garbage collection of a graph's objects,
  tf.data iterators' destructors). Everything that matters is written by
  now: rank 0's checkpoint and its state file, the summaries, the logs
  (flushed here); the ranks agreed to stop, so none waits on another.
  """
  if summary is not None:
    return
  if rank == 0:
    logging.info("Stopped by %s at step %d; the checkpoint in %s is "
                 "current: run the same command to resume",
                 f"signal {stop_signals.requested}" if stop_signals.requested
                 else "another rank's signal",
                 checkpoint_state.latest_step(model_dir),
                 model_dir)
  logging.flush()
  sys.stdout.flush()
  sys.stderr.flush()
  code = signals.StopSignals.exit_code(stop_signals.requested)
  os._exit(code)  # pylint: disable=protected-access
