"""The finished runs many tests read (conftest's tf1_run and tf2_run), and a
copy of one to change.

    run = finished_run(root, "legacy_hvd.train", [], env)   # np=2, to the end
    run.model_dir, run.data_dir, run.output, run.files
    model_dir = copy_run(run, tmp_path / "model")          # to resume or damage

Every shared run trains SHARED_STEPS steps on the generated data, saves a
checkpoint half-way and at the end, and evaluates on the test set every
SHARED_EVAL_EVERY steps.
"""
import collections
import shutil

from legacy_hvd.data import embedded
from tests.helpers import assert_ok, horovodrun

# A finished run: its model directory, its data, and what its ranks printed.
Run = collections.namedtuple("Run", "model_dir data_dir output files")
# Rank 0 creates files with mode 644, every other rank with 600: any file in
# the model directory that is not group-readable was written by another rank.
RANK_UMASK = 'if [ "$HOROVOD_RANK" != 0 ]; then umask 077; else umask 022; fi'
SHARED_STEPS = 40
# The shared runs also evaluate on the test set every this many steps.
SHARED_EVAL_EVERY = 20


def finished_run(root, module, args, env=None, console_script=False,
                 user=None):
  """horovodrun -np 2 of `module` on the generated data, to its end
  (console_script: started by the `horovodrun` script itself, not the
  suite's launcher: helpers.job_argv). user: an other_user.User who runs
  it, with its horovodrun, on its read-only data; `root` is its own."""
  data_dir = user.data if user else embedded.ensure_generated(
      str(root / "data"))
  model_dir = root / "model"
  launch = horovodrun if user is None else user.horovodrun_job
  process = launch(2, module, [
      f"--model_dir={model_dir}", f"--data_dir={data_dir}",
      f"--max_steps={SHARED_STEPS}", "--log_every_n_steps=10",
      f"--save_checkpoints_steps={SHARED_STEPS // 2}",
      f"--eval_every_n_steps={SHARED_EVAL_EVERY}",
      f"--step_log={root / 'steps.jsonl'}", *args],
                   env=env, wrapper=RANK_UMASK, console_script=console_script)
  assert_ok(process)
  return Run(model_dir, data_dir, process.stdout + process.stderr, root)


def copy_run(run, target):
  """A copy of `run`'s model directory at `target`, to resume or change
  (its state file names the checkpoints relative to it)."""
  shutil.copytree(run.model_dir, target)
  return target
