"""Test helpers: launching real horovodrun jobs and reading what they wrote.

    process = horovodrun(2, "legacy_hvd.train", [...])   # runs to the end
    job = start(2, "legacy_hvd.train", [...], log)       # in the background
    error_lines(process)                                 # the one-line errors

Multi-process tests start `horovodrun -np N` in a subprocess with a timeout
and read what the ranks wrote; nothing here mocks Horovod. Every job of
the suite is launched through job_argv: here, on the test hosts
(hostjobs), under another stack's Python or under mpirun.

Beside this module, the helpers of one concern each (fixtures stay in
tests/conftest.py; no test imports from it or from another test module):

  shared_runs      the finished np=2 runs many tests read, and copy_run
  trainers         the four trainers and what their checkpoints call things
  cifar10_layouts  CIFAR-10 written in each official layout, and damaged
  checkpoint_damage  what disks, copies and interrupted saves do to a model
                   directory
  hostjobs         the main job launched on the test hosts
  slurmjobs        the job submitted to the test hosts' Slurm
  launcher         horovodrun as the suite starts it (without its
                   per-launch build probe)
  other_user       a user who is not root, with the stack as a shared
                   software tree, who runs the jobs that matter to users
  workers/         programs a test runs as ranks, or under another stack
"""
import json
import os
import re
import subprocess
import sys
import time

# tests/helpers/__init__.py -> the checkout.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
# Real CIFAR-10 as JPEGs, shipped beside the project on these machines.
SHARED = os.path.join(os.path.dirname(REPO), "shared")
CIFAR10_JPEG = os.environ.get(
    "LEGACY_HVD_CIFAR10_JPEG", os.path.join(SHARED, "data", "cifar10-jpeg.tar.gz"))
CIFAR10_CONVERTER = os.path.join(SHARED, "tools", "cifar10_jpeg_to_bin.py")
JOB_TIMEOUT = 240   # seconds for one horovodrun job in a test
# The trainer without Horovod: its workers started by the project's own
# launcher (legacy_hvd.launch.workers), with horovodrun's -H.
MWMS = "legacy_hvd.train_mwms"
MWMS_FIT = "legacy_hvd.train_mwms_keras"   # model.fit on the same strategy
STRATEGY_TRAINERS = (MWMS, MWMS_FIT)
# horovodrun as the suite starts it (launcher.py).
LAUNCHER = os.path.join(REPO, "tests", "helpers", "launcher.py")


def job_argv(np, module, args, launcher_args=None, python=None,
             wrapper=None, launcher=None, console_script=False):
  """`horovodrun --gloo -np N <launcher_args> python -m module args`, as a
  list.

  launcher_args: horovodrun's host options (default `-H localhost:N`);
  python: the ranks' Python (default this one; Horovod's launcher under
  it then launches, for another stack); wrapper: a shell snippet each rank
  runs before python (a umask, say); launcher: a whole other launcher's
  argv instead of horovodrun's (mpirun ...). MWMS's workers are started by
  legacy_hvd.launch.workers, with the same host options.
  """
  program = [python or sys.executable, "-m", module, *args]
  if wrapper:
    program = ["sh", "-c", f'{wrapper}; exec "$@"', "rank", *program]
  if launcher is None and module in STRATEGY_TRAINERS:
    launcher = [python or sys.executable, "-m", "legacy_hvd.launch.workers",
                *(launcher_args or ["-H", f"localhost:{np}"]), "--"]
  if launcher is None:
    # Horovod's launcher under the ranks' Python, without its per-launch
    # build probe (launcher.py says why), or the `horovodrun` script itself
    # (console_script=True). --gloo, the controller every stack here is
    # built with: without it horovodrun first asks whether Horovod was
    # built with MPI, importing TensorFlow in a child process.
    launcher = (
        [os.path.join(os.path.dirname(python or sys.executable),
                      "horovodrun")] if console_script else
        [python or sys.executable, LAUNCHER])
    launcher += ["--gloo", "-np", str(np),
                 *(launcher_args or ["-H", f"localhost:{np}"])]
  return [*launcher, *program]


def horovodrun(np, module, args, timeout=JOB_TIMEOUT, env=None, **argv_options):
  """Runs the job (job_argv) to its end; returns the CompletedProcess."""
  return subprocess.run(job_argv(np, module, args, **argv_options), cwd=REPO,
                        env=dict(os.environ, **(env or {})),
                        capture_output=True, text=True, timeout=timeout)


def start(np, module, args, log, env=None, popen=None, **argv_options):
  """Starts the job (job_argv) in the background, its output going to the
  open file `log`; returns the Popen. popen: how to start it (default here;
  a test host's Host.popen runs it inside that host)."""
  argv = job_argv(np, module, args, **argv_options)
  if popen is not None:
    return popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
  return subprocess.Popen(argv, cwd=REPO, env=dict(os.environ, **(env or {})),
                          stdout=log, stderr=subprocess.STDOUT)


def error_lines(output):
  """The `program: error: ...` lines of a job's output (str, or a
  CompletedProcess: both of its streams)."""
  if isinstance(output, subprocess.CompletedProcess):
    output = output.stdout + output.stderr
  return [line for line in output.splitlines() if ": error: " in line]


# What TensorFlow prints at its import whatever the job does, not the job's
# lines: TF >= 2.20 whatever TF_CPP_MIN_LOG_LEVEL says (absl's
# pre-InitializeLog warning, the oneDNN notice); the GPU wheels (the GPU
# stack, docs/gpu.md), in TF's log format or absl's, their plugins' double
# registration, TensorRT's absence and, on a host without a driver, cuInit's
# failure.
TENSORFLOW_IMPORT_LINE = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog|I0000 "
    r"|([\d-]+ [\d:.]+: [EW]|[EW]\d{4} [\d:.]+ +\d+) \S+\] "
    r"(Unable to register cu(DNN|FFT|BLAS) factory: |TF-TRT Warning: Could "
    r"not find TensorRT|failed call to cuInit: ))")


def own_lines(stderr):
  """The lines of a process's `stderr` that are not TensorFlow's import
  notices: what the job itself wrote."""
  return [line for line in stderr.strip().splitlines()
          if not TENSORFLOW_IMPORT_LINE.match(line)]


def run_module(module, args, timeout=JOB_TIMEOUT, env=None):
  """Runs `python -m module args` as one plain process (no launcher)."""
  return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO,
                        env=dict(os.environ, **(env or {})),
                        capture_output=True, text=True, timeout=timeout)


def read_results(model_dir):
  with open(os.path.join(model_dir, "results.json")) as f:
    return json.load(f)


def eval_summaries(model_dir):
  """{(tag, step): value} of the TensorBoard `eval` run in model_dir
  (Summary protos of the TF1 job, or the TF2 writer's tensors)."""
  import tensorflow.compat.v1 as tf
  found = {}
  for name in sorted(os.listdir(os.path.join(model_dir, "eval"))):
    for event in tf.train.summary_iterator(
        os.path.join(model_dir, "eval", name)):
      for value in event.summary.value:
        found[value.tag, event.step] = (
            value.simple_value if value.HasField("simple_value")
            else float(tf.make_ndarray(value.tensor)))
  return found


def assert_periodic_evaluations(model_dir, step_log, output, every, last):
  """A run evaluated every `every` steps to `last`: the same numbers in
  results.json's evaluations (the last one its final test_*), in the eval
  run's summaries, in the step log and in rank 0's log lines only."""
  results = read_results(model_dir)
  evaluations = results["evaluations"]
  steps = list(range(every, last + 1, every))
  assert [e["step"] for e in evaluations] == steps
  assert evaluations[-1]["accuracy"] == results["test_accuracy"]
  assert evaluations[-1]["loss"] == results["test_loss"]
  assert all(e["examples"] == results["test_examples"] for e in evaluations)
  summaries = eval_summaries(model_dir)
  for e in evaluations:
    assert abs(summaries["accuracy", e["step"]] - e["accuracy"]) < 1e-6
    assert abs(summaries["loss", e["step"]] - e["loss"]) < 1e-5
  with open(step_log) as f:
    logged = [json.loads(line) for line in f]
  assert [(r["step"], r["test_accuracy"], r["test_loss"]) for r in logged
          if "test_loss" in r] == [(e["step"], e["accuracy"], e["loss"])
                                   for e in evaluations]
  lines = [line for line in output.splitlines()
           if f"step {every}: test accuracy" in line]
  assert len(lines) == 1 and lines[0].startswith("[0]"), lines


def assert_ok(process):
  assert process.returncode == 0, (
      f"exit {process.returncode}\n--- stdout\n{process.stdout[-4000:]}"
      f"\n--- stderr\n{process.stderr[-6000:]}")


def wait_for(predicate, timeout, what):
  """Polls predicate() until true; AssertionError after `timeout` seconds."""
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    if predicate():
      return
    time.sleep(0.2)
  raise AssertionError("timed out waiting for {}".format(what))


def rank_pid(model_dir, rank):
  """The pid of the trainer process of `rank` for this model_dir."""
  for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
      with open(f"/proc/{pid}/cmdline", "rb") as f:
        cmdline = f.read()
      with open(f"/proc/{pid}/environ", "rb") as f:
        environ = f.read().split(b"\0")
    except OSError:
      continue
    tf_config = [v for v in environ if v.startswith(b"TF_CONFIG=")]
    if (b"legacy_hvd.train" in cmdline and str(model_dir).encode() in cmdline
        and (f"HOROVOD_RANK={rank}".encode() in environ or (
            tf_config and f'"index": {rank}}}'.encode() in tf_config[0]))
        and not cmdline.startswith(b"/bin/sh")):
      return int(pid)
  return None
