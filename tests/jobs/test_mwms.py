"""legacy_hvd.train_mwms, the TF2 loop on tf.distribute's
MultiWorkerMirroredStrategy, its workers started by legacy_hvd.launch.workers:
the Horovod loop's numbers step for step (with either optimizer), its
model directories continued, a killed or frozen worker in one line. The
faults every trainer meets (SIGTERM, NaN, damaged checkpoints, failed
writes) are tests/jobs/test_faults.py's and test_write_faults.py's, this
trainer among them (helpers.trainers)."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from legacy_hvd.common import checkpoint_state
from legacy_hvd.data import embedded
from tests.helpers import MWMS, MWMS_FIT, assert_ok, error_lines, horovodrun
from tests.helpers import rank_pid, read_results, start, wait_for
from tests.helpers.shared_runs import SHARED_STEPS, copy_run, finished_run

# TensorFlow 2 only (TF 1.15's strategy is experimental and graph-bound):
# the default stack runs these, and the newest, where Horovod is not.
pytestmark = pytest.mark.one_stack


@pytest.fixture(scope="module")
def mwms_run(tmp_path_factory):
  """np=2 of train_mwms with the shared runs' flags (tf2_run's too)."""
  return finished_run(tmp_path_factory.mktemp("mwms-run"), MWMS,
                      ["--nocpu_affinity"])


@pytest.fixture(scope="module")
def mwms_fit_run(tmp_path_factory):
  """np=2 of train_mwms_keras (model.fit) with the shared runs' flags."""
  return finished_run(tmp_path_factory.mktemp("mwms-fit-run"), MWMS_FIT,
                      ["--nocpu_affinity"])


def test_mwms_fit_trains_and_writes_results_and_world(mwms_fit_run):
  results = read_results(mwms_fit_run.model_dir)
  assert results["path"] == "mwms-fit" and results["world_size"] == 2
  assert results["weights_in_sync"] and results["test_accuracy"] > 0
  with open(mwms_fit_run.model_dir / "world.json") as f:
    assert json.load(f)["size"] == 2
  assert checkpoint_state.latest_step(mwms_fit_run.model_dir) == SHARED_STEPS
  assert "MWMS Keras fit" in mwms_fit_run.output
  assert "Traceback" not in mwms_fit_run.output


def step_losses(run):
  """[(step, loss)] of the run's step log (its evaluations' lines aside)."""
  with open(run.files / "steps.jsonl") as f:
    entries = [json.loads(line) for line in f]
  return [(e["step"], e["loss"]) for e in entries if "loss" in e]


def test_mwms_is_the_horovod_loop_step_for_step(mwms_run, tf2_run):
  # At np=2 the strategy's sum of half-scaled gradients is Horovod's
  # average bit for bit (a division by 2 is exact): every step's loss, the
  # final weights, the test set's scores.
  assert step_losses(mwms_run) == step_losses(tf2_run)
  ours, theirs = read_results(mwms_run.model_dir), read_results(
      tf2_run.model_dir)
  assert ours["path"] == "mwms" and ours["world_size"] == 2
  assert ours["weights_in_sync"]
  assert ours["weight_digests"] == theirs["weight_digests"]
  assert ours["test_accuracy"] == theirs["test_accuracy"]
  assert ours["evaluations"] == theirs["evaluations"]
  assert "MWMS loop (v1 optimizer)" in mwms_run.output
  # The chief alone writes checkpoints; no rank prints a traceback, and
  # the chief outlives the others (no worker's heartbeat fails at the end).
  assert checkpoint_state.latest_step(mwms_run.model_dir) == SHARED_STEPS
  assert "Traceback" not in mwms_run.output
  assert "heartbeat" not in mwms_run.output.lower()


def test_mwms_keras_optimizer_is_the_horovod_loops(tmp_path):
  # --optimizer_impl=keras: the Keras optimizer applies the strategy's sums
  # (keras_compat.apply_summed_gradients), as the Horovod loop's applies
  # Horovod's averages: at np=2 the same weights bit for bit. Where there
  # is no Horovod, the MWMS run alone (the Keras 3 optimizer).
  data_dir = embedded.ensure_generated(str(tmp_path / "data"))
  results = {}
  for module in (MWMS, "legacy_hvd.train_tf2"):
    model_dir = tmp_path / module
    process = horovodrun(2, module, [
        f"--model_dir={model_dir}", f"--data_dir={data_dir}",
        "--optimizer_impl=keras", "--max_steps=20", "--nocpu_affinity"])
    assert_ok(process)
    assert "(keras optimizer)" in process.stderr
    assert "Traceback" not in process.stderr
    results[module] = read_results(model_dir)
    assert results[module]["weights_in_sync"]
  assert results[MWMS]["weight_digests"] == results[
      "legacy_hvd.train_tf2"]["weight_digests"]


@pytest.mark.parametrize("source", ["mwms_run", "tf2_run", "tf1_run"])
def test_mwms_continues_a_model_directory(source, request, tmp_path):
  # Its own, the Horovod TF2 loop's (the same checkpoint keys) and the TF1
  # job's (converted on resume): the optimizer's state is made on every
  # worker before the chief restores it, so the workers stay in step. (The
  # run it continues is the one fixture it asks for: without Horovod, its
  # own still runs.)
  run = request.getfixturevalue(source)
  model_dir = copy_run(run, tmp_path / "model")
  process = horovodrun(2, MWMS, [
      f"--model_dir={model_dir}", f"--data_dir={run.data_dir}",
      f"--max_steps={SHARED_STEPS + 5}", "--log_every_n_steps=5"])
  assert_ok(process)
  assert f"Resuming from global step {SHARED_STEPS}" in process.stderr
  results = read_results(model_dir)
  assert (results["start_step"], results["steps"]) == (SHARED_STEPS,
                                                       SHARED_STEPS + 5)
  assert results["weights_in_sync"]
  assert "Traceback" not in process.stderr


@pytest.mark.parametrize("module", [MWMS, MWMS_FIT])
def test_mwms_bad_flag_is_one_line_before_any_worker_trains(module,
                                                            tmp_path):
  process = horovodrun(2, module, [f"--model_dir={tmp_path / 'model'}",
                                 "--fp16_allreduce"])
  assert process.returncode == 2
  errors = error_lines(process)
  assert len(errors) == 1, process.stderr[-3000:]
  assert "--fp16_allreduce is Horovod's compression" in errors[0]
  assert not (tmp_path / "model").exists()


def launch(module, model_dir, data_dir, log):
  return start(2, module, [
      f"--model_dir={model_dir}", f"--data_dir={data_dir}",
      "--max_steps=100000", "--save_checkpoints_steps=20",
      "--log_every_n_steps=10"], log)


@pytest.mark.parametrize("fault", ["killed", "frozen"])
@pytest.mark.parametrize("module", [MWMS, MWMS_FIT])
def test_mwms_lost_worker_is_named_in_one_line(module, fault, tmp_path):
  # MWMS learns of a dead or frozen peer from its coordination service's
  # heartbeat (10 s), not at once as Gloo does; the launcher gives the
  # survivors that long (workers.SURVIVORS_SECONDS) before it ends them.
  model_dir = tmp_path / "model"
  log_path = tmp_path / f"{fault}.log"
  with open(log_path, "w") as log:
    job = launch(module, model_dir,
                 embedded.ensure_generated(str(tmp_path / "data")), log)
    try:
      wait_for(lambda: checkpoint_state.latest_step(model_dir) >= 20, 120,
               "a checkpoint at step 20")
      os.kill(rank_pid(model_dir, 1),
              signal.SIGKILL if fault == "killed" else signal.SIGSTOP)
      lost = time.monotonic()
      job.wait(timeout=60)
      seconds = time.monotonic() - lost
    finally:
      if job.poll() is None:
        job.kill()
  left = rank_pid(model_dir, 1)
  if left:   # a frozen worker would outlive the failed test
    os.kill(left, signal.SIGKILL)
  output = log_path.read_text()
  print(f"{module}: {fault} worker: the launcher exited {seconds:.1f} s "
        "after the fault")
  errors = error_lines(output)
  assert len(errors) == 1, output[-6000:]
  assert "lost rank 1 of 2 on host" in errors[0], errors[0]
  assert ("(process ended)" if fault == "killed"
          else "(not answering: stopped or stuck)") in errors[0]
  assert "<stderr>:Traceback" not in output
  assert rank_pid(model_dir, 0) is None
  assert left is None


def test_a_sigterm_tensorflow_takes_as_the_strategy_starts_is_the_stop():
  # MWMS's start installs TensorFlow's pre-emption notifier, which takes
  # SIGTERM until the trainer takes it back: one that comes meanwhile (the
  # window the signal_moments tool hit 3 times in 6) is still the stop.
  with socket.socket() as s:
    s.bind(("localhost", 0))
    port = s.getsockname()[1]
  script = textwrap.dedent("""
      import os, signal, time
      import tensorflow as tf
      from legacy_hvd.common.signals import StopSignals
      from legacy_hvd.rank import cluster
      stop_signals = StopSignals().install()
      tf.distribute.MultiWorkerMirroredStrategy()
      os.kill(os.getpid(), signal.SIGTERM)
      print("alive, recorded:", stop_signals.requested, flush=True)
      cluster.take_back_sigterm(stop_signals)
      for _ in range(200):
        if not stop_signals.requested:
          time.sleep(0.05)
      print("recorded:", stop_signals.requested)""")
  tf_config = {"cluster": {"worker": [f"localhost:{port}"]},
               "task": {"type": "worker", "index": 0}}
  done = subprocess.run([sys.executable, "-c", script], capture_output=True,
                        text=True, timeout=120,
                        env=dict(os.environ, TF_CONFIG=json.dumps(tf_config)))
  assert done.returncode == 0, done.stderr[-3000:]
  assert "SIGTERM caught" in done.stderr   # TensorFlow's handler took it
  assert done.stdout.splitlines() == [
      "alive, recorded: 0", f"recorded: {int(signal.SIGTERM)}"], done.stdout


def test_a_ctrl_c_before_the_workers_handlers_is_their_stop(tmp_path):
  # A Ctrl-C as the job starts reaches the workers while they import
  # TensorFlow: launch.workers holds it until their handlers exist, so it
  # is their stop at the first step, not Python's KeyboardInterrupt.
  model_dir = tmp_path / "model"
  log_path = tmp_path / "job.log"
  with open(log_path, "w") as log:
    job = launch(MWMS, model_dir,
                 embedded.ensure_generated(str(tmp_path / "data")), log)
    try:
      wait_for(lambda: len(psutil.Process(job.pid).children()) == 2, 30,
               "both workers started")
      job.send_signal(signal.SIGINT)
      assert job.wait(timeout=120) == 128 + signal.SIGINT
    finally:
      if job.poll() is None:
        job.kill()
  output = log_path.read_text()
  assert "Traceback" not in output and "KeyboardInterrupt" not in output
  assert re.search(r"Stopped by (signal 2|another rank's signal) at step 1;",
                   output), output[-3000:]
  assert checkpoint_state.latest_step(model_dir) == 1
