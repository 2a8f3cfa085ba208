"""The first-node check: does the main job use this node's GPUs as it should?

    python -m legacy_hvd.launch.gpu_check [--np=N] [--steps=200]
        [--data_dir=DIR] [--out=DIR] [--device=cpu]

Counts the GPUs TensorFlow sees (none: one line, exit 1, nothing written);
runs the main job on them under horovodrun with NCCL_DEBUG=INFO, Horovod's
timeline and TensorFlow's C++ log on; reads its records
(legacy_hvd/launch/job_evidence.py): rank k on GPU k, the allreduce on NCCL,
every rank's weights equal; then its images/sec against tools/bare_loop.py
on one GPU. One verdict line each, a final line, exit 0 only if all hold.
--device=cpu checks the check itself, on CPU: placement from the job's start
line, the allreduce on Gloo."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags

from flags import gpu_check as gpu_check_flags
from legacy_hvd.common import cli
from legacy_hvd.launch import job_evidence

FLAGS = flags.FLAGS
PROGRAM = "legacy_hvd.launch.gpu_check"
BATCH_SIZE = 64   # the main job's default per-rank batch, and the bare loop's
CPU_NP = 2        # --device=cpu: the smallest job with an allreduce
PROBE_TIMEOUT = 180   # seconds for TensorFlow to import and list its GPUs
STEP_SECONDS = 5      # the most a step may take, for the time-outs
START_SECONDS = 240   # what a rank may take to start and to end
# TensorFlow's own count of the GPUs it can use, in a process of its own:
# the launch room never imports TensorFlow (TF 1.15 has the call under
# experimental only).
GPU_PROBE = ("import json, tensorflow as tf; c = tf.config; gpus = (getattr("
             "c, 'list_physical_devices', None) or c.experimental."
             "list_physical_devices)('GPU'); print(json.dumps({'tensorflow': "
             "tf.version.VERSION, 'gpus': len(gpus)}))")
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BARE_LOOP = os.path.join(CHECKOUT, "tools", "bare_loop.py")


def gpu_count():
  """(GPUs TensorFlow sees, what was seen, in words)."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  try:
    done = subprocess.run([sys.executable, "-c", GPU_PROBE], env=env,
                          capture_output=True, text=True,
                          timeout=PROBE_TIMEOUT)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    count = seen["gpus"]
    said = [f"TensorFlow {seen['tensorflow']} lists {count or 'none'}"]
  except (subprocess.TimeoutExpired, ValueError, IndexError):
    count, said = 0, ["TensorFlow does not load in " + sys.executable]
  smi = shutil.which("nvidia-smi")
  if smi is None:
    said.append("no nvidia-smi on PATH")
  else:
    try:
      listed = subprocess.run([smi, "-L"], capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT).stdout
      said.append(f"nvidia-smi -L lists {listed.count('GPU ')}")
    except (OSError, subprocess.TimeoutExpired) as e:
      said.append(f"nvidia-smi -L failed ({e})")
  return count, ", ".join(said)


def horovodrun():
  """horovodrun beside this Python, else on PATH; the test suite's
  LEGACY_HVD_HOROVODRUN in its place (tools/stacks.py says why)."""
  script = os.environ.get("LEGACY_HVD_HOROVODRUN")
  if script:
    return [sys.executable, script]
  beside = os.path.join(os.path.dirname(sys.executable), "horovodrun")
  return [beside if os.path.exists(beside) else "horovodrun"]


def run_job(np, steps, out, data_dir, device):
  """The main job under horovodrun, its merged output kept in out/job.log;
  (exit code or None after a time-out, the output)."""
  command = [*horovodrun(), "--gloo", "-np", str(np), "-H",
             f"localhost:{np}", sys.executable, "-m", "legacy_hvd.train",
             f"--max_steps={steps}", f"--batch_size={BATCH_SIZE}",
             f"--model_dir={os.path.join(out, 'job')}"]
  command += [f"--data_dir={data_dir}"] if data_dir else []
  # A rank that sees no GPU stops in one line rather than train on the CPU.
  command += ["--require_gpu"] if device == "gpu" else []
  # What the ranks' records need: NCCL's communicator lines, TensorFlow's
  # device lines (INFO, which the package quiets by default), the timeline.
  env = dict(os.environ, NCCL_DEBUG="INFO", TF_CPP_MIN_LOG_LEVEL="0",
             HOROVOD_TIMELINE=os.path.join(out, "timeline.json"))
  print(f"{PROGRAM}: {device} job: {' '.join(command)}", flush=True)
  log_path = os.path.join(out, "job.log")
  with open(log_path, "w") as log:
    try:
      code = subprocess.run(command, env=env, stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            timeout=START_SECONDS + steps * STEP_SECONDS
                            ).returncode
    except subprocess.TimeoutExpired:
      code = None
    except OSError as e:
      cli.fail(f"{command[0]}: cannot run ({e.strerror}); expected Horovod's "
               f"horovodrun beside {sys.executable} or on PATH")
  with open(log_path) as f:
    return code, f.read()


def job_verdict(code, steps, results, out, lines):
  """The job ran its steps and exited 0; else how it ended, in its own
  first error line (a bad --data_dir, say) when a rank wrote one."""
  if code == 0 and results is not None:
    return job_evidence.Verdict("job", True, f"{results['steps']} of {steps} "
                                "steps, exit 0")
  ended = "timed out" if code is None else f"exited {code}"
  said = [line for own in lines.values() for line in own if ": error: " in line]
  return job_evidence.Verdict("job", False, f"the main job {ended}"
                              f"{' (' + said[0] + ')' if said else ''}; its "
                              f"output: {os.path.join(out, 'job.log')}")


def bare_loop_rate(steps, out, data_dir, device):
  """(images/sec of tools/bare_loop.py at np=1 on GPU 0 or the CPU, or None;
  why None)."""
  if not os.path.isfile(BARE_LOOP):
    return None, (f"no {BARE_LOOP} (not a checkout): the bare loop not run")
  step_log = os.path.join(out, "bare_loop_steps.jsonl")
  command = [sys.executable, BARE_LOOP, f"--max_steps={steps}",
             f"--step_log={step_log}", f"--batch_size={BATCH_SIZE}"]
  command += [f"--data_dir={data_dir}"] if data_dir else []
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [CHECKOUT] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
  if device == "gpu":
    env["CUDA_VISIBLE_DEVICES"] = "0"   # the same GPU as rank 0's
  with open(os.path.join(out, "bare_loop.log"), "w") as log:
    try:
      code = subprocess.run(command, env=env, cwd=CHECKOUT, stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            timeout=START_SECONDS + steps * STEP_SECONDS
                            ).returncode
    except subprocess.TimeoutExpired:
      code = "a time-out"
  if code != 0:
    return None, f"the bare loop failed ({code}; {log.name})"
  return job_evidence.step_log_rate(step_log, BATCH_SIZE), ""


def throughput_line(results, np, bare_rate, why_not, device):
  job_rate = (results or {}).get("images_per_sec")
  if not job_rate:
    return "throughput: the job measured none"
  line = (f"throughput: the job {job_rate:.0f} images/sec on {np} ranks "
          f"({job_rate / np:.0f} per rank)")
  if bare_rate is None:
    return f"{line}; {why_not}"
  where = "GPU 0" if device == "gpu" else "the CPU"
  return (f"{line}; the bare loop {bare_rate:.0f} images/sec at np=1 on "
          f"{where}: {job_rate / np / bare_rate:.2f} of it per rank")


def output_dir(path):
  """--out made ready (a new directory when unset); one line if unusable."""
  if path is None:
    return tempfile.mkdtemp(prefix="legacy-hvd-gpu-check-")
  if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
    cli.fail(f"--out={path}: exists and is not an empty directory; expected "
             "a new or empty directory (the job would resume from it)")
  try:
    os.makedirs(path, exist_ok=True)
  except OSError as e:
    cli.fail(f"--out={path}: cannot be made ({e.strerror}); expected a "
             "writable path")
  return path


def main(argv):
  del argv
  device, np = FLAGS.device, FLAGS.np
  if device == "gpu":
    count, seen = gpu_count()
    if count == 0:
      cli.fail(f"no GPU on this host ({seen}); expected a node with NVIDIA "
               "GPUs and the GPU stack (make install "
               "HOROVOD_GPU_OPERATIONS=NCCL), or --device=cpu to check the "
               "check itself")
    if count < 2 or (np or count) > count:
      cli.fail(f"{'--np=%d: ' % np if np else ''}this host has {count} GPU"
               f"{'s' * (count > 1)} ({seen}); expected 2 or more, one per "
               "rank: the check is of an allreduce between GPUs")
    np = np or count
  else:
    np = np or CPU_NP
  out = output_dir(FLAGS.out)
  started = time.monotonic()
  code, output = run_job(np, FLAGS.steps, out, FLAGS.data_dir, device)
  try:
    with open(os.path.join(out, "job", "results.json")) as f:
      results = json.load(f)
  except (OSError, ValueError):
    results = None
  lines = job_evidence.rank_lines(output)
  verdicts = [
      job_verdict(code, FLAGS.steps, results, out, lines),
      job_evidence.placement(lines, np, device),
      job_evidence.collective(
          lines, np, device, job_evidence.timeline_activities(
              os.path.join(out, "timeline.json"))),
      job_evidence.weights(results, np)]
  for verdict in verdicts:
    print(f"{PROGRAM}: {'PASS' if verdict.ok else 'FAIL'} {verdict.name}: "
          f"{verdict.detail}", flush=True)
  bare_rate, why_not = (bare_loop_rate(FLAGS.steps, out, FLAGS.data_dir,
                                       device) if verdicts[0].ok
                        else (None, "the bare loop not run"))
  throughput = throughput_line(results, np, bare_rate, why_not, device)
  print(f"{PROGRAM}: {throughput}", flush=True)
  failed = [v.name for v in verdicts if not v.ok]
  took = time.monotonic() - started
  if failed:
    print(f"{PROGRAM}: FAILED: {', '.join(failed)} ({len(failed)} of "
          f"{len(verdicts)} checks, {took:.0f} s); the records: {out}",
          flush=True)
    sys.exit(cli.INPUT_ERROR)
  print(f"{PROGRAM}: all {len(verdicts)} checks hold on {np} "
        f"{'GPUs' if device == 'gpu' else 'CPU ranks'} ({took:.0f} s); the "
        f"records: {out}", flush=True)


def run():
  """Console-script entry point (legacy-hvd-gpu-check)."""
  gpu_check_flags.define_gpu_check()
  # Not cli.run: it quiets TensorFlow, which this side never imports.
  app.run(main, flags_parser=cli.parse_flags)


if __name__ == "__main__":
  run()
