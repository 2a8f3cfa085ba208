"""Faults with real horovodrun jobs and real signals: nothing hangs or is lost.

The TF1 job's fault tests run against both TF2 variants too (the tf.function
loop, legacy_hvd.train_tf2, and Keras fit, legacy_hvd.train_keras) and the
Estimator job (legacy_hvd.train_estimator, where tf.estimator exists): the
same behaviour and messages."""
import collections
import logging
import os
import re
import signal
import socket
import time

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from legacy_hvd.checkpoints import migration
from legacy_hvd.checkpoints import resume
from legacy_hvd.common import checkpoint_state
from legacy_hvd.common import cli
from legacy_hvd.common import model_dir_claim
from legacy_hvd.data import embedded
from legacy_hvd.model import cnn
from legacy_hvd.training import job_faults
from tests.helpers import (assert_ok, error_lines, horovodrun, rank_pid,
                           read_results, run_module, start, wait_for)
from tests.helpers import checkpoint_damage
from tests.helpers.checkpoint_damage import NONE_INTACT
from tests.helpers.shared_runs import copy_run
from tests.helpers.trainers import TRAINERS, legacy_stack_runs_graph_jobs

PROMPT_EXIT_SECONDS = 30


def launch(np, model_dir, log, *args, module="legacy_hvd.train"):
  """The trainer in the background (helpers.start), logging every 10 steps."""
  return start(np, module, [f"--model_dir={model_dir}",
                            "--log_every_n_steps=10", *args], log)


def checkpoint_step(model_dir):
  return checkpoint_state.latest_step(str(model_dir)) or None


def saved_steps(model_dir, prefix):
  """The steps of the checkpoints `prefix`-N in model_dir, oldest first."""
  return sorted(int(match.group(1)) for match in (
      re.fullmatch(re.escape(prefix) + r"-(\d+)\.index", name)
      for name in os.listdir(model_dir)) if match)


def test_killed_rank_ends_job_promptly_and_relaunch_resumes(tmp_path,
                                                            isolated_cache):
  model_dir = tmp_path / "model"
  # Killed just after the checkpoint at 20, long before the end; the
  # relaunch then trains the rest, from that checkpoint.
  args = ["--max_steps=100", "--save_checkpoints_steps=20"]
  with open(tmp_path / "first.log", "w") as log:
    job = launch(2, model_dir, log, *args)
    wait_for(lambda: (checkpoint_step(model_dir) or 0) >= 20, 180,
             "a checkpoint at step 20")
    os.kill(rank_pid(model_dir, 1), signal.SIGKILL)
    killed_at = time.monotonic()
    job.wait(timeout=PROMPT_EXIT_SECONDS)
  assert time.monotonic() - killed_at < PROMPT_EXIT_SECONDS
  assert job.returncode != 0
  saved = checkpoint_step(model_dir)
  assert saved >= 20
  reader = tf.train.load_checkpoint(str(model_dir))
  for name in reader.get_variable_to_shape_map():
    assert np.all(np.isfinite(reader.get_tensor(name))) or name == "global_step"

  relaunched = horovodrun(2, "legacy_hvd.train",
                          [f"--model_dir={model_dir}", *args])
  assert_ok(relaunched)
  results = read_results(model_dir)
  assert results["start_step"] == saved and results["steps"] == 100
  assert results["weights_in_sync"]


def test_a_second_job_is_refused_and_an_aborted_rank_prints_no_stacks(
    tmp_path, isolated_cache):
  model_dir = tmp_path / "model"
  log_path = tmp_path / "job.log"
  with open(log_path, "w") as log:
    job = launch(2, model_dir, log, "--max_steps=5000")
    wait_for(lambda: "step 20:" in log_path.read_text(), 180, "step 20")
    # A second job started on the model directory the first trains in (an
    # eager trainer: the claim is every trainer's first check) names the
    # first and stops before it writes anything.
    first = rank_pid(model_dir, 0)
    second = run_module("legacy_hvd.train_tf2", [f"--model_dir={model_dir}"])
    # Gloo can abort a rank (SIGABRT) when its peers die mid-collective;
    # absl would have Python's faulthandler print every thread's stack then.
    os.kill(rank_pid(model_dir, 1), signal.SIGABRT)
    job.wait(timeout=PROMPT_EXIT_SECONDS)
  output = log_path.read_text()
  assert job.returncode != 0
  assert "Process 1 exit with status code 134." in output
  assert "Fatal Python error" not in output
  assert "most recent call first" not in output
  # The survivor names it, as any lost rank.
  errors = error_lines(output)
  assert len(errors) == 1 and "lost rank 1 of 2 on host" in errors[0], (
      output[-3000:])
  refused = error_lines(second)
  assert second.returncode == cli.INPUT_ERROR and len(refused) == 1, \
      second.stderr
  assert refused[0].startswith(
      f"legacy_hvd.train_tf2: error: --model_dir={model_dir}: in use by "
      f"another job (rank 0 on {socket.gethostname()}, pid {first}, since "), \
      refused[0]
  assert "Traceback" not in second.stderr


# A run stopped by SIGTERM, then resumed: what its output said and where,
# and the results.json of the same run uninterrupted.
Stopped = collections.namedtuple(
    "Stopped", "model_dir data_dir output step left_in_tmp uninterrupted "
    "claim_left")


@pytest.fixture(scope="module")
def stopped_runs(tmp_path_factory):
  """trainer -> its Stopped run: started, SIGTERM once past step 20,
  resumed for 10 more steps, and run again to that step uninterrupted;
  each trainer's runs once, read by the SIGTERM test and the
  damaged-checkpoint test."""
  runs = {}

  def get(trainer):
    if trainer.module not in runs:
      runs[trainer.module] = stop_and_resume(
          trainer, tmp_path_factory.mktemp(str(trainer)))
    return runs[trainer.module]
  return get


def stop_and_resume(trainer, root):
  data_dir = embedded.ensure_generated(str(root / "data"))
  model_dir = root / "model"
  log_path = root / "job.log"
  tmp = root / "tmp"   # the ranks' TMPDIR (the Estimator's scratch)
  tmp.mkdir()
  # --deterministic: the resumed run's weights are compared bit for bit.
  args = [f"--data_dir={data_dir}", "--deterministic"]
  with open(log_path, "w") as log:
    job = start(2, trainer.module, [
        f"--model_dir={model_dir}", "--log_every_n_steps=10", *args,
        "--max_steps=5000", "--save_checkpoints_steps=100000"], log,
        env={"TMPDIR": str(tmp)})
    wait_for(lambda: "step 20:" in log_path.read_text(), 180, "step 20")
    job.send_signal(signal.SIGTERM)
    job.wait(timeout=PROMPT_EXIT_SECONDS)
  output = log_path.read_text()
  claim_left = os.path.exists(model_dir_claim.path_in(str(model_dir)))
  left_in_tmp = sorted(path.name for path in tmp.glob("legacy_hvd_*"))
  # horovodrun passes the signal to every rank: the others' agreement can
  # reach rank 0 before its own signal does.
  stopped = re.search(
      r"Stopped by (?:signal 15|another rank's signal) at step (\d+)", output)
  assert stopped, output[-3000:]
  step = int(stopped.group(1))
  saved = checkpoint_step(model_dir)
  assert not (model_dir / "results.json").exists()
  resumed = horovodrun(2, trainer.module, [
      f"--model_dir={model_dir}", *args, f"--max_steps={step + 10}"])
  assert_ok(resumed)
  uninterrupted = horovodrun(2, trainer.module, [
      f"--model_dir={root / 'uninterrupted'}", *args,
      f"--max_steps={step + 10}"])
  assert_ok(uninterrupted)
  return Stopped(model_dir, data_dir, output, step, left_in_tmp,
                 read_results(root / "uninterrupted"), claim_left), saved


@pytest.mark.parametrize("trainer", TRAINERS, ids=str)
def test_sigterm_saves_a_checkpoint_at_the_current_step(trainer,
                                                        stopped_runs):
  run, saved = stopped_runs(trainer)
  # Every rank exits with 143. horovodrun may lose that code, though: its
  # launcher reaps a terminated rank's shell in one thread while another
  # waits for it, which then reads 0 (Horovod 0.28.1, safe_shell_exec);
  # with every rank's lost, horovodrun exits 0. So check each code it saw.
  assert set(re.findall(r"exit with status code (\d+)", run.output)) <= {"143"}
  # Saved where the ranks stopped, far from any periodic checkpoint.
  assert run.step >= 20 and saved == run.step
  assert "]<stderr>:Traceback" not in run.output
  # The stop's exit removes what a rank made for itself (the Estimator's
  # scratch model directory on ranks 1..N).
  assert run.left_in_tmp == []
  results = read_results(run.model_dir)
  assert results["start_step"] == run.step and results["weights_in_sync"]
  # Stopped and resumed is the run never stopped, bit for bit.
  assert results["weight_digests"] == run.uninterrupted["weight_digests"]
  # Its claim on the model directory went with it: a relaunch on another
  # host need not watch it lapse.
  assert not run.claim_left


@pytest.mark.parametrize("trainer", legacy_stack_runs_graph_jobs())
def test_nan_stops_naming_the_step_and_keeps_good_checkpoint(
    tmp_path, trainer, isolated_cache):
  model_dir = tmp_path / "model"
  process = horovodrun(2, trainer.module,
                       [f"--model_dir={model_dir}", "--optimizer=sgd",
                        "--lr=1e12", "--max_steps=200",
                        "--save_checkpoints_steps=1"], timeout=150)
  assert process.returncode != 0
  errors = error_lines(process)
  assert len(errors) == 1, process.stdout + process.stderr
  diverged = re.search(r"training diverged at step (\d+): the averaged "
                       r"gradients hold NaN or Inf", errors[0])
  assert diverged, errors[0]
  step = int(diverged.group(1))
  # Every checkpoint up to the step before holds finite weights only.
  assert checkpoint_step(model_dir) == step - 1
  reader = tf.train.load_checkpoint(str(model_dir))
  for name in trainer.weights:
    assert np.all(np.isfinite(reader.get_tensor(name)))
  assert "]<stderr>:Traceback" not in process.stdout + process.stderr


def evaluated(trainer):
  """Every 20 steps, as the shared runs are evaluated; not the Estimator
  job, whose periodic evaluation tests/jobs/test_estimator.py runs (here each
  round would cost a new session)."""
  if trainer.module == "legacy_hvd.train_estimator":
    return []
  return ["--eval_every_n_steps=20"]


def finished_run(trainer, stopped_runs, tmp_path):
  """A copy of a finished run of `trainer` with two checkpoints, and the
  flags that continue it: the SIGTERM test's stopped and resumed run (its
  checkpoints at the stop and at the end), one per trainer in this module
  (the suite's shared runs are read in another worker's group)."""
  run, _ = stopped_runs(trainer)
  return copy_run(run, tmp_path / "model"), [
      "--log_every_n_steps=10", f"--data_dir={run.data_dir}",
      *evaluated(trainer)]


@pytest.mark.parametrize("trainer", legacy_stack_runs_graph_jobs())
def test_moved_directory_with_a_cut_checkpoint_falls_back_and_resumes(
    tmp_path, trainer, stopped_runs, isolated_cache):
  # A model directory copied from elsewhere, its state file naming the
  # checkpoints there (as the TF1 jobs wrote it before they named them
  # relative), and its newest data file cut short, as an interrupted copy
  # leaves it (every other kind of damage: the matrix below).
  model_dir, args = finished_run(trainer, stopped_runs, tmp_path)
  args = [f"--model_dir={model_dir}", *args]
  first = read_results(model_dir)
  assert first["weights_in_sync"]
  last = first["steps"]
  before = saved_steps(model_dir, trainer.checkpoint)[-2]
  checkpoint_damage.names_elsewhere(model_dir, tmp_path / "elsewhere")
  newest = model_dir / f"{trainer.checkpoint}-{last}"
  data_file = checkpoint_damage.data_file(str(newest))
  os.truncate(data_file, os.path.getsize(data_file) // 2)

  process = horovodrun(2, trainer.module, args + [f"--max_steps={last + 20}"])
  assert_ok(process)
  output = process.stdout + process.stderr
  assert "]<stderr>:Traceback" not in output
  warnings = [line for line in output.splitlines()
              if re.match(r"\[\d+\]<stderr>:W\d{4} ", line)
              and "resume.py" in line]
  assert len(warnings) == 2 and all(w.startswith("[0]") for w in warnings)
  assert (f"state file names checkpoints in {tmp_path / 'elsewhere'} "
          "(the directory was moved or copied from there") in warnings[0]
  assert (f"Checkpoint {trainer.checkpoint}-{last} in {model_dir} is "
          f"damaged (") in warnings[1]
  assert f"resuming from {trainer.checkpoint}-{before}" in warnings[1]
  results = read_results(model_dir)
  assert results["start_step"] == before and results["steps"] == last + 20
  assert results["weights_in_sync"] and results["path"] == trainer.path
  # Named relative from now on: the directory moves again freely.
  state = (model_dir / "checkpoint").read_text()
  assert str(tmp_path) not in state
  assert f'model_checkpoint_path: "{trainer.checkpoint}-{last + 20}"' in state
  # The resumed run's own evaluations: every 20 global steps, the last at
  # its end (the final evaluation).
  end = last + 20
  if evaluated(trainer):
    assert [e["step"] for e in results["evaluations"]] == [
        *range(before // 20 * 20 + 20, end, 20), end]
    assert results["evaluations"][-1]["accuracy"] == results["test_accuracy"]
  else:
    assert results["evaluations"] == []
  # TensorBoard logs on rank 0 (Keras's callback writes under train/).
  events = [name for _, _, names in os.walk(model_dir) for name in names
            if name.startswith("events.out.tfevents")]
  assert events


def rank0_problem(trainer, model_dir):
  """The model-directory checks rank 0 of `trainer` runs before any rank
  trains (graph_job.start, eager_job.start), for its own checkpoints: the
  problem's line, or None. Its claim on the directory is released."""
  try:
    if trainer.checkpoint == "model.ckpt":
      return job_faults.model_dir_problem(
          0, model_dir, cnn.PARAM_SHAPES,
          lambda: migration.check(model_dir, "adam", migration.TF1))
    return job_faults.model_dir_problem(
        0, model_dir, job_faults.tf2_checkpoint_shapes(),
        lambda: migration.check(model_dir, "adam", migration.TF2))
  finally:
    model_dir_claim.release()


@pytest.mark.parametrize("trainer", TRAINERS, ids=str)
def test_every_kind_of_damage_falls_back_or_stops_in_one_line(
    trainer, stopped_runs, tmp_path, caplog, capsys, monkeypatch):
  # Each kind on a copy of the trainer's SIGTERM run (its checkpoints at
  # the stop and at the end), through what rank 0 runs before training
  # (the runs above show it wired into the job) and what evaluate and
  # export read with: the step resumed from, one warning line, nothing
  # intact touched; or, none intact, one line and nothing touched at all.
  run, _ = stopped_runs(trainer)
  monkeypatch.setattr(cli, "_exiting", False)   # cli.fail sets it
  outcomes = {}
  for kind in checkpoint_damage.KINDS:
    model_dir = str(copy_run(run, tmp_path / kind.name.replace(" ", "-")))
    listed = resume.listing(model_dir).paths
    before, newest = listed[-2:]
    expected = kind.apply(model_dir, newest, before)
    files = checkpoint_damage.digests(model_dir)
    intact = {name: digest for name, digest in files.items()
              if any(name in checkpoint_damage.files_of(path)
                     for path in listed if path != newest)}

    caplog.clear()
    with caplog.at_level(logging.WARNING):
      try:
        read = resume.latest_or_fail(model_dir)
      except SystemExit:
        read = NONE_INTACT
    # What evaluate and export read: the same checkpoint, nothing written.
    assert read == expected, kind.name
    assert checkpoint_damage.digests(model_dir) == files, kind.name
    try:
      caplog.clear()
      with caplog.at_level(logging.WARNING):
        problem = rank0_problem(trainer, model_dir)
      if problem is not None:
        raise cli.UserError(problem)
      outcome = resume.listing(model_dir).paths[-1]
      warnings = [r.getMessage() for r in caplog.records
                  if r.levelno >= logging.WARNING]
    except cli.UserError as e:
      outcome, warnings = NONE_INTACT, [str(e)]
    outcomes[kind.name] = (checkpoint_state.step_of(outcome)
                           if outcome != NONE_INTACT else outcome)
    assert outcome == expected, kind.name
    assert len(warnings) == 1, (kind.name, warnings)
    if outcome == NONE_INTACT:
      assert warnings[0].startswith(f"--model_dir={model_dir}: no intact "
                                    "checkpoint is left ("), warnings[0]
      assert "move the directory away to start afresh" in warnings[0]
      assert checkpoint_damage.digests(model_dir) == files, kind.name
      continue
    now = checkpoint_damage.digests(model_dir)
    assert {n: now.get(n) for n in intact} == intact, kind.name
    if expected == before:
      assert (f"Checkpoint {os.path.basename(newest)} in {model_dir} is "
              "damaged (") in warnings[0], warnings[0]
      assert checkpoint_damage.files_of(newest) == set(), kind.name
    # The trainer's session or CheckpointManager restores what the state
    # file names: the checkpoint fallen back to.
    assert tf.train.latest_checkpoint(model_dir) == expected, kind.name
  print(f"{trainer}: {outcomes}")


def test_checkpoint_of_another_model_is_one_line(tmp_path):
  model_dir = tmp_path / "other"
  with tf.Graph().as_default(), tf.Session() as session:
    with tf.variable_scope("conv1"):
      tf.get_variable("weights", shape=[5, 5, 3, 64])
    tf.train.get_or_create_global_step()
    session.run(tf.global_variables_initializer())
    tf.train.Saver().save(session, str(model_dir / "model.ckpt"),
                          global_step=7)
  before = sorted(os.listdir(model_dir))
  process = horovodrun(2, "legacy_hvd.train", [f"--model_dir={model_dir}"],
                       timeout=PROMPT_EXIT_SECONDS + 30)
  assert process.returncode != 0
  errors = error_lines(process)
  assert len(errors) == 1
  assert ("model.ckpt-7 is a checkpoint of a different model (has "
          "conv1/weights [5, 5, 3, 64], expected [3, 3, 3, 32])") in errors[0]
  assert sorted(os.listdir(model_dir)) == before


# A file in the way is found before hvd.init() by the checks every entry
# point shares (startup.before_horovod): one trainer shows it, on one stack
# (those checks are os.path calls and the project's cli, no TensorFlow).
# An unwritable directory is found by rank 0 after hvd.init(), in a session
# (TF1) or eagerly (the TF2 variants): every trainer shows it (on the TF 1.15
# stack the graph jobs: trainers.legacy_stack_runs_graph_jobs).
@pytest.mark.parametrize("trainer, model_dir, expected", [
    *(pytest.param(TRAINERS[0], path, "is a file; expected a directory",
                   marks=pytest.mark.one_stack)
      for path in ("{tmp}/file", "{tmp}/file/sub")),
    *(pytest.param(*trainer.values, "/sys/legacy_hvd_test_model",
                   "not writable", marks=trainer.marks)
      for trainer in legacy_stack_runs_graph_jobs())])
def test_unusable_model_dir_is_one_line(tmp_path, trainer, model_dir,
                                        expected):
  (tmp_path / "file").write_text("not a directory")
  model_dir = model_dir.format(tmp=tmp_path)
  process = horovodrun(2, trainer.module, [f"--model_dir={model_dir}"],
                       timeout=PROMPT_EXIT_SECONDS + 60)
  assert process.returncode != 0
  errors = error_lines(process)
  assert len(errors) == 1 and f"--model_dir={model_dir}" in errors[0]
  assert expected in errors[0]
  assert "]<stderr>:Traceback" not in process.stdout + process.stderr
  assert not os.path.exists(model_dir) or os.path.isfile(model_dir)


def test_unknown_flag_is_one_line(tmp_path):
  process = horovodrun(2, "legacy_hvd.train", ["--batchsize=3"], timeout=60)
  assert process.returncode != 0
  errors = error_lines(process)
  assert len(errors) == 1 and "Unknown command line flag 'batchsize'" in errors[0]
