"""How every trainer meets faults: the same behaviour and the same lines."""
import contextlib
import os
import sys

from absl import logging
import tensorflow.compat.v2 as tf

from legacy_hvd.checkpoints import resume
from legacy_hvd.common import checkpoint_state
from legacy_hvd.common import cli
from legacy_hvd.common import model_dir_claim
from legacy_hvd.faults import failed_writes
from legacy_hvd.faults import loss_watch
from legacy_hvd.faults import probes
from legacy_hvd.model import cnn
from legacy_hvd.model import finite_gradients
from legacy_hvd.rank import startup


def tf2_checkpoint_shapes():
  """cnn.PARAM_SHAPES by the keys of a TF2 object checkpoint."""
  return {resume.tf2_key(name): shape
          for name, shape in cnn.PARAM_SHAPES.items()}


def check_model_dir(rank, collectives, model_dir, expected_shapes,
                    migrate=None):
  """Rank 0's checks of the model directory, whose verdict every rank learns:
  all exit non-zero together, none left waiting in a collective."""
  problem = model_dir_problem(rank, model_dir, expected_shapes, migrate)
  # Horovod: rank 0 tells every rank whether its checks passed.
  failed = collectives.broadcast_from_rank0(int(problem is not None))
  if failed and rank == 0:
    cli.fail(problem)
  if failed:
    cli.exit_quietly()


def model_dir_problem(rank, model_dir, expected_shapes, migrate=None):
  """Rank 0's checks of the model directory, before any other collective: the
  problem's one line, or None. migrate(): True when it took care of another
  trainer's checkpoint."""
  if rank != 0:
    return None
  try:
    startup.prepare_model_dir(model_dir)
    model_dir_claim.claim(model_dir)   # before anything is written
    resume.adopt(model_dir)   # moved here, or its state file unreadable
    if migrate is None or not migrate():
      resume.prepare_resume(model_dir, expected_shapes)
    failed_writes.log_removed_at_start(model_dir)
  except cli.UserError as e:
    model_dir_claim.release()   # refused: the directory is left as it was
    return str(e)
  return None


def end_on_write_failure(model_dir, watch):
  """Around training and results: a failed write ends this rank in one line."""
  # Horovod: the other ranks, waiting in a collective for this one, are
  # told that it failed; they name it in one line and exit.
  return failed_writes.end_on_failure(model_dir, watch.mark_failed)


def fail_diverged(progress):
  """The one line when finite_gradients.checked stopped a step."""
  cli.fail(f"training diverged at step {progress.last_step + 1}: the "
           "averaged gradients hold NaN or Inf (last loss "
           f"{progress.last_values.get('loss')}); stopped before "
           "applying them, the last checkpoint is untouched")


def end_on_error(error, progress, size, watch):
  """After a failed step: the divergence or lost host's line, else raises."""
  if finite_gradients.is_non_finite_gradient(error):
    fail_diverged(progress)
  # Horovod: a failed collective ends every rank; if a host was lost, the
  # first surviving rank names it in one line.
  if size == 1 or not watch.check():
    raise error


@contextlib.contextmanager
def end_on_failed_step(progress, size, watch):
  """end_on_error for a failed step (a tf.errors.OpError) in the block."""
  try:
    yield
  except tf.errors.OpError as e:
    end_on_error(e, progress, size, watch)


def watch_lost_hosts(roster, rank, size, model_dir):
  """Starts loss_watch.LossWatch over the gathered `roster` (np > 1)."""
  watch = loss_watch.LossWatch(
      roster, lambda lost: report_lost_peers(roster, lost, rank, model_dir),
      cli.LOST_PEER, cli.REPORTER_HEAD_START, stand_down=cli.exiting)
  if size > 1:
    watch.start()
  return watch


def report_lost_peers(roster, lost, rank, model_dir):
  """The first surviving rank: one line naming what was lost and rank 0's last
  checkpoint: an error line under horovodrun alone, a report under a launcher
  that decides (cli.DECIDER)."""
  if rank == 0:
    step = checkpoint_state.latest_step(model_dir)
    saved = (f"rank 0's last checkpoint is step {step} in {model_dir}"
             if step else "rank 0 has saved no checkpoint yet")
  else:
    saved = (f"rank 0's last checkpoint is in {model_dir} on "
             f"{roster.ranks[0][0]}")
  failed = set(lost.values()) == {probes.FAILED}   # an error, not a loss
  what = (f"{roster.describe(lost)} (see its error)" if failed
          else f"lost {roster.describe(lost)}")
  decider = os.environ.get(cli.DECIDER)
  if decider:
    # One failure, one verdict: the launcher's, which knows what follows.
    line = cli.report_line(f"{what}; this run stops. {saved}; {decider} "
                           "decides what follows")
  elif failed:
    line = cli.error_line(f"{what}; the job stops. {saved}")
  else:
    # A host where some rank still answers is up: it keeps all its slots.
    remaining = ",".join(
        f"{host}:{len(ranks)}" for host, ranks in roster.hosts().items()
        if any(r not in lost for r in ranks))
    line = cli.error_line(f"{what}; the job stops. {saved}; relaunch on the "
                          f"remaining hosts (-H {remaining}) to resume")
  print(line, file=sys.stderr, flush=True)


def exit_if_stopped(summary, stop_signals, rank, model_dir,
                    wait_for_all=None):
  """After a stop signal ended training (summary None): rank 0 says where it
  saved, and every rank exits at once after wait_for_all() (none may leave
  before rank 0 saved): horovodrun, and Slurm after KillWait, kill a rank
  still exiting seconds after the signal, and the interpreter's exit can
  take longer (a graph's garbage collection, tf.data's destructors)."""
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
  if wait_for_all is not None:
    try:
      wait_for_all()
    except Exception:  # pylint: disable=broad-except
      pass   # a rank gone already: nothing is left to wait for
  code = stop_signals.exit_code()
  model_dir_claim.release()   # os._exit skips atexit's
  os._exit(code)  # pylint: disable=protected-access
