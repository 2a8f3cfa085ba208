"""Pre-emption on MultiWorkerMirroredStrategy: the project's stop agreement
beside TensorFlow's PreemptionCheckpointHandler, measured in one invocation.

    python -m tools.preemption_compare --out DIR [--steps 200] [--stop_at 100]
        [--warmup 40] [--timed_steps 200] [--repeats 3] [--parts stop,cost]
        [--data_dir D]

Two paths, np=2 on this host, the same model, data, optimizer and steps:
`stop-agreement` is legacy_hvd.train_mwms (a stop request summed in the
step's all-reduce, the chief's save, exit 143); `handler` is this module's
`worker`: the step in a plain MWMS loop, each call through
PreemptionCheckpointHandler.run, TensorFlow's defaults untouched. The
worker lives here, not in tools/bare_loop_tf2.py: it needs a checkpoint, a
step and a resumable input, and the bare loop is the floor the benchmark's
floor-* cases measure with nothing else.

stop: for each path a run to --steps, then --repeats times a run whose
worker 1 gets SIGTERM once rank 0 logged step --stop_at and the same
command again to --steps. Reported: seconds from the signal to each
worker's exit, exit codes, the step saved and each worker's last step,
what a stop and a finished run leave beside the model directory, and the
largest difference between the resumed run's final checkpoint and the
uninterrupted one's (0.0: bitwise equal). cost: the worker with and
without run(), interleaved, --repeats times: the median step time over
--timed_steps after --warmup, and the seconds run() adds to the step it
wraps.

The workers start as legacy_hvd.launch.workers starts them (its plan: one
TF_CONFIG each), one process each here so that every exit code and time is
seen (the launcher reports the first). Writes DIR/report.json and
DIR/report.md; every run stays in DIR/<path>/ (worker-<rank>.log, model/).
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

import numpy as np
import tensorflow.compat.v2 as tf

from legacy_hvd.checkpoints import resume
from legacy_hvd.common.config import Config
from legacy_hvd.data import cifar10
from legacy_hvd.launch import workers
from legacy_hvd.model import cnn
from legacy_hvd.model import optimizers
from legacy_hvd.rank import cluster
from legacy_hvd.rank import devices
from legacy_hvd.rank import placement
from legacy_hvd.rank.world import Ranks
from legacy_hvd.training import job
from tools import bare_loop_tf2

NP = 2
SIGNALLED_RANK = 1        # a worker other than the chief is pre-empted
BASE_LR = 0.001           # the trainer's default --lr, per worker
TIMEOUT_SECONDS = 600     # one run
POLL_SECONDS = 0.01       # how often the workers' exits are looked for
# Checkpoint entries that count calls or saves, not training state.
COUNTERS = ("save_counter/", "checkpointed_runs/", "_CHECKPOINTABLE_OBJECT")
PATHS = {
    "stop-agreement": ["-m", "legacy_hvd.train_mwms", "--optimizer_impl=v1",
                       "--save_checkpoints_steps=100000"],
    "handler": ["-m", "tools.preemption_compare", "worker", "--handler"],
}
PLAIN = ["-m", "tools.preemption_compare", "worker"]   # no wrapper
STOP_FIGURES = ("exit_codes", "seconds_to_exit", "seconds_to_all_exited",
                "seconds_median", "seconds_spread", "saved_step",
                "last_steps", "left_after_the_stop",
                "left_after_a_finished_run", "resumed_exit_codes",
                "resumed_vs_whole")


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  commands = parser.add_subparsers(dest="command")
  worker = commands.add_parser("worker", help="one MWMS worker (TF_CONFIG)")
  worker.add_argument("--model_dir", required=True)
  worker.add_argument("--step_log", required=True)
  worker.add_argument("--max_steps", type=int, required=True)
  worker.add_argument("--handler", action="store_true",
                      help="each step through PreemptionCheckpointHandler.run")
  worker.add_argument("--data_dir")
  parser.add_argument("--out")
  parser.add_argument("--steps", type=int, default=200)
  parser.add_argument("--stop_at", type=int, default=100,
                      help="rank 0's step after which worker 1 gets SIGTERM")
  parser.add_argument("--warmup", type=int, default=40)
  parser.add_argument("--timed_steps", type=int, default=200)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--parts", default="stop,cost",
                      help="stop: the stop and resume runs; cost: the timed "
                      "runs (comma-separated)")
  parser.add_argument("--data_dir")
  args = parser.parse_args(argv)
  if args.command == "worker":
    return args
  if not args.out:
    parser.error("--out: required; expected a new or empty directory")
  if os.path.exists(args.out) and os.listdir(args.out):
    parser.error(f"--out={args.out}: not empty; expected a new or empty "
                 "directory (the tool never overwrites earlier runs)")
  if not 0 < args.stop_at < args.steps - 2:
    parser.error(f"--stop_at={args.stop_at}: expected 1 to --steps - 3 "
                 "(a stop comes a step or two after its signal)")
  args.parts = args.parts.split(",")
  if not args.parts or set(args.parts) - {"stop", "cost"}:
    parser.error(f"--parts={','.join(args.parts)}: expected stop, cost or "
                 "both")
  if min(args.warmup, args.timed_steps, args.repeats) < 1:
    parser.error("--warmup, --timed_steps and --repeats: expected >= 1")
  return args


# -- the handler's worker -----------------------------------------------------
def worker(args):
  """train_mwms's model, data, optimizer and step without its runtime; with
  --handler, each step through PreemptionCheckpointHandler.run, which
  restores at start and, after a SIGTERM anywhere, saves and exits."""
  data = cifar10.load(args.data_dir)
  own_threads = placement.threads()
  resolver = cluster.cluster_resolver(0)
  ranks = Ranks.of_workers(resolver.cluster_spec().as_dict()["worker"],
                           resolver.task_id)
  config = Config(data_dir=args.data_dir)
  devices.place_eager_rank(config, ranks, own_threads)
  strategy = tf.distribute.MultiWorkerMirroredStrategy(
      cluster_resolver=resolver)
  with strategy.scope():
    params = {name: tf.Variable(cnn.initial_value(name, config.seed),
                                name=name) for name in cnn.PARAM_SHAPES}
    step = tf.Variable(0, dtype=tf.int64, trainable=False,
                       aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    optimizer = optimizers.v1("adam", BASE_LR * ranks.size)
    # The trainers' checkpoint keys (object_checkpoints).
    checkpoint = tf.train.Checkpoint(
        step=step, optimizer=optimizer,
        **{resume.tf2_attribute(n): v for n, v in params.items()})
    handler = (tf.distribute.experimental.PreemptionCheckpointHandler(
        resolver, checkpoint, args.model_dir) if args.handler else None)
  replica_step = bare_loop_tf2.mwms_replica_step(strategy, params, optimizer)

  @tf.function
  def train_step(images, labels):
    strategy.run(replica_step, args=(images, labels))
    step.assign_add(1)

  def timed_step(images, labels):
    began = time.perf_counter()
    train_step(images, labels)
    return time.perf_counter() - began

  start = int(step.numpy())
  batches = iter(strategy.distribute_datasets_from_function(
      lambda context: job.batches(
          config, data.train_images, data.train_labels,
          context.num_input_pipelines, context.input_pipeline_id,
          start * config.batch_size)))
  log = open(args.step_log if ranks.rank == 0 else os.devnull, "a",
             buffering=1)
  try:
    while step.numpy() < args.max_steps:
      images, labels = next(batches)
      record = {}
      if handler:
        began = time.perf_counter()
        inside = handler.run(timed_step, images, labels)
        # What run() adds to the step it wraps.
        record["wrapper_seconds"] = time.perf_counter() - began - inside
      else:
        train_step(images, labels)
      record.update(step=int(step.numpy()), time=time.time())
      log.write(json.dumps(record) + "\n")
  except SystemExit:   # the handler's exit_fn, after its save
    print(f"worker {ranks.rank}: exits at step {int(step.numpy())}",
          flush=True)
    raise
  if ranks.rank == 0:
    tf.train.CheckpointManager(checkpoint, args.model_dir, 1).save(
        checkpoint_number=int(step.numpy()))


# -- the comparison -----------------------------------------------------------
def command(path, run_dir, max_steps, args):
  flags = [f"--model_dir={os.path.join(run_dir, 'model')}",
           f"--step_log={os.path.join(run_dir, 'steps.jsonl')}",
           f"--max_steps={max_steps}"]
  if args.data_dir:
    flags.append(f"--data_dir={args.data_dir}")
  return [sys.executable, *path, *flags]


def launch(argv, run_dir, stop_at=None):
  """Runs NP workers of `argv`, each logging to run_dir/worker-<rank>.log;
  with stop_at, SIGTERM to worker SIGNALLED_RANK once rank 0 logged that
  step. -> (exit codes, seconds from the signal to each exit or None)."""
  os.makedirs(run_dir, exist_ok=True)
  planned = workers.plan([("localhost", NP)], workers.free_ports(NP))
  processes = []
  for worker_plan in planned:
    with open(os.path.join(run_dir, f"worker-{worker_plan.rank}.log"),
              "w") as log:
      processes.append(subprocess.Popen(
          argv, env=dict(os.environ, TF_CONFIG=worker_plan.tf_config),
          stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT))
  exits, signalled = [None] * NP, None
  deadline = time.monotonic() + TIMEOUT_SECONDS
  while None in exits:
    now = time.monotonic()
    for rank, process in enumerate(processes):
      if exits[rank] is None and process.poll() is not None:
        exits[rank] = now
    if (stop_at and signalled is None and
        last_logged_step(os.path.join(run_dir, "steps.jsonl")) >= stop_at):
      processes[SIGNALLED_RANK].send_signal(signal.SIGTERM)
      signalled = time.monotonic()
    if now > deadline:
      workers.end(processes)
      sys.exit(f"preemption_compare: error: {run_dir}: no exit within "
               f"{TIMEOUT_SECONDS} s; its logs are there")
    time.sleep(POLL_SECONDS)
  codes = [p.returncode for p in processes]
  return codes, [None if signalled is None else round(e - signalled, 2)
                 for e in exits]


def logged(step_log, key="time"):
  """{step: rank 0's `key`}, a partly written last line and evaluations
  left out."""
  values = {}
  if os.path.exists(step_log):
    with open(step_log) as f:
      for line in f:
        if line.endswith("\n") and "test_loss" not in line:
          record = json.loads(line)
          values[record["step"]] = record[key]
  return values


def last_logged_step(step_log):
  return max(logged(step_log), default=0)


def training_state(model_dir):
  """{key: value} of the newest checkpoint, counters left out."""
  reader = tf.train.load_checkpoint(model_dir)
  return {key: reader.get_tensor(key)
          for key in reader.get_variable_to_shape_map()
          if not key.startswith(COUNTERS)}


def largest_difference(state, other):
  """Max |difference| over the entries both hold (0.0: bitwise equal), or
  None if their entries differ."""
  if state.keys() != other.keys():
    return None
  return max(float(np.max(np.abs(state[k].astype(np.float64) -
                                 other[k].astype(np.float64))))
             for k in state)


def left_beside(run_dir):
  """What a run left beside its model directory."""
  return sorted(set(os.listdir(run_dir)) - {"model", "steps.jsonl", "resumed"}
                - {f"worker-{r}.log" for r in range(NP)})


def stop_and_resume(name, args):
  """One path's uninterrupted run, then --repeats stopped and resumed runs:
  {figure: its value, or a list of one per repeat}."""
  out = os.path.join(args.out, name)
  whole = os.path.join(out, "whole")
  codes, _ = launch(command(PATHS[name], whole, args.steps, args), whole)
  if codes != [0] * NP:
    sys.exit(f"preemption_compare: error: {whole}: exit codes {codes}; "
             "expected 0 (its logs are there)")
  runs = []
  for repeat in range(args.repeats):
    stopped = os.path.join(out, f"stopped-{repeat}")
    codes, exit_seconds = launch(
        command(PATHS[name], stopped, args.steps, args), stopped,
        stop_at=args.stop_at)
    saved = training_state(os.path.join(stopped, "model"))[
        "step/.ATTRIBUTES/VARIABLE_VALUE"]
    run = {"exit_codes": codes, "seconds_to_exit": exit_seconds,
           "seconds_to_all_exited": max(exit_seconds),
           "saved_step": int(saved), "last_steps": last_steps(stopped),
           "left_after_the_stop": left_beside(stopped)}
    run["resumed_exit_codes"], _ = launch(
        command(PATHS[name], stopped, args.steps, args),
        os.path.join(stopped, "resumed"))
    run["resumed_vs_whole"] = largest_difference(
        training_state(os.path.join(stopped, "model")),
        training_state(os.path.join(whole, "model")))
    runs.append(run)
  figures = {key: [run[key] for run in runs] for key in runs[0]}
  figures["left_after_a_finished_run"] = left_beside(whole)
  seconds = figures["seconds_to_all_exited"]
  figures["seconds_median"] = statistics.median(seconds)
  figures["seconds_spread"] = round(spread(seconds), 3)
  return figures


def last_steps(run_dir):
  """Each worker's last step as its log says (the handler's worker), else
  rank 0's step log's."""
  steps = []
  for rank in range(NP):
    with open(os.path.join(run_dir, f"worker-{rank}.log")) as f:
      said = [line.split()[-1] for line in f
              if line.startswith(f"worker {rank}: exits at step")]
    steps.append(int(said[-1]) if said else None)
  if steps[0] is None:
    steps[0] = last_logged_step(os.path.join(run_dir, "steps.jsonl"))
  return steps


def median_step_seconds(times, first, last):
  """Median of rank 0's step times first+1..last."""
  return statistics.median(times[s] - times[s - 1]
                           for s in range(first + 1, last + 1))


def spread(values):
  """(max - min) / median."""
  return (max(values) - min(values)) / statistics.median(values)


def handler_cost(args):
  """{plain, handler: [median step seconds of each repeat], wrapper: [the
  median seconds run() added to a step]}, interleaved."""
  total = args.warmup + args.timed_steps
  runs = {"plain": [], "handler": [], "wrapper": []}
  for repeat in range(args.repeats):
    for name, path in (("plain", PLAIN), ("handler", PATHS["handler"])):
      run_dir = os.path.join(args.out, "timing", f"{name}-{repeat}")
      codes, _ = launch(command(path, run_dir, total, args), run_dir)
      if codes != [0] * NP:
        sys.exit(f"preemption_compare: error: {run_dir}: exit codes {codes}")
      step_log = os.path.join(run_dir, "steps.jsonl")
      runs[name].append(median_step_seconds(logged(step_log), args.warmup,
                                            total))
      if name == "handler":
        wrapper = logged(step_log, "wrapper_seconds")
        runs["wrapper"].append(statistics.median(
            wrapper[s] for s in range(args.warmup + 1, total + 1)))
  return runs


def report_md(report):
  lines = []
  if "paths" in report:
    lines += ["| | " + " | ".join(report["paths"]) + " |",
              "| --- |" + " --- |" * len(report["paths"])]
    for key in STOP_FIGURES:
      lines.append(f"| {key} | " + " | ".join(
          str(figures[key]) for figures in report["paths"].values()) + " |")
    lines += ["", f"SIGTERM to worker {SIGNALLED_RANK} after step "
              f"{report['stop_at']} of {report['steps']}; resumed_vs_whole: "
              "max |difference| of the final checkpoints (0.0: bitwise).", ""]
  if "step_seconds" in report:
    cost = report["step_seconds"]
    lines += ["| seconds (medians of repeats) | plain step | handler.run "
              "step | run() itself |", "| --- | --- | --- | --- |"]
    for figure in ("median", "spread"):
      lines.append(f"| {figure} | " + " | ".join(
          f"{cost[name][figure]:.6f}"
          for name in ("plain", "handler", "wrapper")) + " |")
    lines += ["", f"handler / plain: {cost['handler_over_plain']:.3f} "
              f"({report['repeats']} repeats, {report['timed_steps']} steps "
              f"after {report['warmup']})"]
  return "\n".join(lines) + "\n"


def main(argv=None):
  args = parse_args(argv)
  if args.command == "worker":
    worker(args)
    return
  os.makedirs(args.out, exist_ok=True)
  report = {
      "np": NP, "steps": args.steps, "stop_at": args.stop_at,
      "warmup": args.warmup, "timed_steps": args.timed_steps,
      "repeats": args.repeats, "data_dir": args.data_dir,
      "tensorflow": tf.__version__}
  if "stop" in args.parts:
    report["paths"] = {name: stop_and_resume(name, args) for name in PATHS}
  if "cost" in args.parts:
    runs = handler_cost(args)
    medians = {name: statistics.median(v) for name, v in runs.items()}
    report["step_seconds"] = dict(
        {name: {"runs": v, "median": medians[name], "spread": spread(v)}
         for name, v in runs.items()},
        handler_over_plain=medians["handler"] / medians["plain"])
  with open(os.path.join(args.out, "report.json"), "w") as f:
    json.dump(report, f, indent=1)
  with open(os.path.join(args.out, "report.md"), "w") as f:
    f.write(report_md(report))
  print(report_md(report), end="")


if __name__ == "__main__":
  main()
