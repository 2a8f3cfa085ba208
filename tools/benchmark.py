"""Measures the real trainers' throughput, side by side, in one invocation.

    python tools/benchmark.py --out DIR [--steps 300] [--warmup 60] [--repeats 3]
    python tools/benchmark.py --out DIR --cases knobs   # each knob's effect
    python tools/benchmark.py --out DIR --cases tf1-np1 \
        --stacks .venv-tf1.15.5/bin/python   # the same graph on TF 1.15 too
    python tools/benchmark.py --out DIR --cases eval   # periodic evaluation
    python tools/benchmark.py --out DIR --cases estimator   # the Estimator job
    python tools/benchmark.py --out DIR --cases mwms --data_dir D   # MWMS
    python tools/benchmark.py --out DIR --cases past-horovod --data_dir D
        # MWMS loop and fit, their floors, Horovod's TF2 loop and fit and
        # the TF1 job, at np 1, 2 and 4

Across test hosts over emulated links (100mbit, 1gbit), with the knobs and
step time split into compute and allreduce: tools/hostbench.py.

Every case launches the real trainer (legacy_hvd.train, train_tf2,
train_keras or train_estimator) under horovodrun (train_mwms and
train_mwms_keras under legacy_hvd.launch.workers) (the plain-TF case: with
python alone, --nohorovod) for warmup + steps global steps with its default
settings, or one knob changed, and reads rank 0's step log: images/sec is
counted over the steps after the warm-up only (no start-up, graph building,
first checkpoint or evaluation).
The cases run interleaved, repeat after repeat, so slow phases of a noisy
machine hit every case alike; each figure is the median of its repeats and
each ratio is computed from medians of this one invocation. --stacks runs
every case once more per other stack's Python (with the horovodrun beside
it), interleaved with the rest, named `<case>@tf<version>`, and adds the
ratio of each stack to this one. Writes DIR/benchmark.json and
DIR/benchmark.md.

The `bare` case (tools/bare_loop.py) is the limit: the same graph and data
in a bare session.run loop, no hooks, no Horovod (the `floor-*` cases,
tools/bare_loop_tf2.py: the eager trainers' on either strategy). Every case
is also given as a fraction of it, with the spread of its repeats ((max -
min) / median) and each rank's peak resident memory (every rank runs under
tools/peak_rss.py: getrusage's high-water mark, the largest of the repeats).

The `eval` cases run with --eval_every_n_steps=EVAL_EVERY beside the same
trainer without it: their training steps between evaluations, the median
step time over the steps that do not follow an evaluation (the same steps
left out in both), as a ratio of on / off (target: no slower), and the
seconds one evaluation adds.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from tools import stacks

TIMEOUT_SECONDS = 900
BATCH_SIZE = 64            # per worker, the trainer's default

# name -> (module, np, extra trainer flags, launcher flags). Launcher flags
# None: no horovodrun at all (plain TF). Gloo is named explicitly: a Horovod
# built with MPI too would otherwise default to MPI.
GLOO, MPI = ["--gloo"], ["--mpi"]
# tf.distribute's workers: started by legacy_hvd.launch.workers, no Horovod.
WORKERS = ["launch_workers"]
BARE_LOOP = "tools.bare_loop"   # takes --max_steps, --step_log, --data_dir,
                                # --horovod only
BARE_LOOP_TF2 = "tools.bare_loop_tf2"   # the same, and --strategy
CASES = {
    # The limit: the same graph in a bare session.run loop (tools/bare_loop.py).
    "bare": (BARE_LOOP, 1, [], None),
    # The limit with Horovod: that loop, Horovod's optimizer, nothing else.
    "bare-np2": (BARE_LOOP, 2, ["--horovod"], GLOO),
    "bare-np4": (BARE_LOOP, 4, ["--horovod"], GLOO),
    "tf1-np1": ("legacy_hvd.train", 1, [], GLOO),
    "tf1-np2": ("legacy_hvd.train", 2, [], GLOO),
    "tf1-np4": ("legacy_hvd.train", 4, [], GLOO),
    "tf2-np1": ("legacy_hvd.train_tf2", 1, ["--optimizer_impl=keras"], GLOO),
    "tf1-np1-plain": ("legacy_hvd.train", 1, ["--nohorovod"], None),
    "tf1-np1-synthetic": ("legacy_hvd.train", 1, ["--synthetic"], GLOO),
    "tf1-np4-synthetic": ("legacy_hvd.train", 4, ["--synthetic"], GLOO),
    # Knobs, each against its default case above.
    "tf1-np2-unpinned": ("legacy_hvd.train", 2, ["--nocpu_affinity"], GLOO),
    "tf1-np4-unpinned": ("legacy_hvd.train", 4, ["--nocpu_affinity"], GLOO),
    "tf1-np4-fp16": ("legacy_hvd.train", 4, ["--fp16_allreduce"], GLOO),
    "tf1-np4-accumulate2": ("legacy_hvd.train", 4,
                            ["--backward_passes_per_step=2"], GLOO),
    "tf1-np4-cycle5ms": ("legacy_hvd.train", 4, [],
                         GLOO + ["--cycle-time-ms", "5"]),
    "tf1-np4-nofusion": ("legacy_hvd.train", 4, [],
                         GLOO + ["--fusion-threshold-mb", "0"]),
    "tf1-np2-deterministic": ("legacy_hvd.train", 2, ["--deterministic"],
                              GLOO),
    "tf1-np4-mpi": ("legacy_hvd.train", 4, [], MPI),
    # The Keras fit variant of the TF2 path, beside the TF1 job's cases.
    "keras-np1": ("legacy_hvd.train_keras", 1, [], GLOO),
    "keras-np4": ("legacy_hvd.train_keras", 4, [], GLOO),
    # The TF1 job as tf.estimator code (TF 1.15 to 2.15), beside the TF1
    # job's cases; without periodic evaluation, so only training is timed.
    "estimator-np1": ("legacy_hvd.train_estimator", 1, [], GLOO),
    "estimator-np4": ("legacy_hvd.train_estimator", 4, [], GLOO),
    # Past Horovod: the TF2 loop on MultiWorkerMirroredStrategy, beside the
    # Horovod TF2 loop with the same (v1) optimizer and the TF1 job.
    "tf2-np4": ("legacy_hvd.train_tf2", 4, ["--optimizer_impl=v1"], GLOO),
    "mwms-np1": ("legacy_hvd.train_mwms", 1, [], WORKERS),
    "mwms-np2": ("legacy_hvd.train_mwms", 2, [], WORKERS),
    "mwms-np4": ("legacy_hvd.train_mwms", 4, [], WORKERS),
    "tf2-np1-v1": ("legacy_hvd.train_tf2", 1, ["--optimizer_impl=v1"], GLOO),
    # Keras fit on MWMS, beside Horovod's Keras fit (keras-np*).
    "mwms-fit-np1": ("legacy_hvd.train_mwms_keras", 1, [], WORKERS),
    "mwms-fit-np2": ("legacy_hvd.train_mwms_keras", 2, [], WORKERS),
    "mwms-fit-np4": ("legacy_hvd.train_mwms_keras", 4, [], WORKERS),
    # Their limits: the same model in a bare tf.function loop on either
    # strategy (tools/bare_loop_tf2.py).
    "floor-tf2-np1": (BARE_LOOP_TF2, 1, ["--strategy=horovod"], GLOO),
    "floor-mwms-np1": (BARE_LOOP_TF2, 1, ["--strategy=mwms"], WORKERS),
    "floor-tf2-np2": (BARE_LOOP_TF2, 2, ["--strategy=horovod"], GLOO),
    "floor-tf2-np4": (BARE_LOOP_TF2, 4, ["--strategy=horovod"], GLOO),
    "floor-mwms-np2": (BARE_LOOP_TF2, 2, ["--strategy=mwms"], WORKERS),
    "floor-mwms-np4": (BARE_LOOP_TF2, 4, ["--strategy=mwms"], WORKERS),
}
# Periodic held-out evaluation (--eval_every_n_steps), on against off.
EVAL_EVERY = 50
EVAL_CASES = {   # name -> the case without evaluation
    "tf1-np2-eval": "tf1-np2",
    "tf2-np2-eval": "tf2-np2",
    "keras-np2-eval": "keras-np2",
}
CASES.update({
    "tf2-np2": ("legacy_hvd.train_tf2", 2, ["--optimizer_impl=v1"], GLOO),
    "keras-np2": ("legacy_hvd.train_keras", 2, [], GLOO),
})
CASES.update({name: (CASES[off][0], CASES[off][1],
                     CASES[off][2] + [f"--eval_every_n_steps={EVAL_EVERY}"],
                     CASES[off][3]) for name, off in EVAL_CASES.items()})
DEFAULT_CASES = ["bare", "bare-np2", "bare-np4", "tf1-np1", "tf1-np2",
                 "tf1-np4", "tf2-np1", "tf1-np1-plain", "tf1-np1-synthetic",
                 "tf1-np4-synthetic"]
KNOB_CASES = ["tf1-np2-unpinned", "tf1-np4-unpinned", "tf1-np4-fp16",
              "tf1-np4-accumulate2", "tf1-np4-cycle5ms", "tf1-np4-nofusion",
              "tf1-np2-deterministic"]
# name -> (numerator case, denominator case, target or None)
RATIOS = {
    "np2 / np1 (aggregate)": ("tf1-np2", "tf1-np1", 0.90),
    "np4 / np1 (aggregate)": ("tf1-np4", "tf1-np1", 0.90),
    "tf1 np1 / bare loop": ("tf1-np1", "bare", 0.95),
    "tf1 / tf2 at np1": ("tf1-np1", "tf2-np1", 1.00),
    "horovod np1 / plain TF": ("tf1-np1", "tf1-np1-plain", 0.97),
    "real / synthetic data at np1": ("tf1-np1", "tf1-np1-synthetic", 0.97),
    "real / synthetic data at np4": ("tf1-np4", "tf1-np4-synthetic", 0.97),
    # Horovod's own cost at np2/np4 (the bare loop with Horovod), and the
    # trainer against that limit.
    "horovod bare loop np2 / np1 (aggregate)": ("bare-np2", "bare", None),
    "horovod bare loop np4 / np1 (aggregate)": ("bare-np4", "bare", None),
    "tf1 np2 / horovod bare loop np2": ("tf1-np2", "bare-np2", None),
    "tf1 np4 / horovod bare loop np4": ("tf1-np4", "bare-np4", None),
    "unpinned / pinned at np2": ("tf1-np2-unpinned", "tf1-np2", None),
    "unpinned / pinned at np4": ("tf1-np4-unpinned", "tf1-np4", None),
    "fp16 allreduce / default at np4": ("tf1-np4-fp16", "tf1-np4", None),
    "2 backward passes per step / default at np4": ("tf1-np4-accumulate2",
                                                    "tf1-np4", None),
    "5 ms cycle time / default at np4": ("tf1-np4-cycle5ms", "tf1-np4", None),
    "no tensor fusion / default at np4": ("tf1-np4-nofusion", "tf1-np4",
                                          None),
    "deterministic / default at np2": ("tf1-np2-deterministic", "tf1-np2",
                                       None),
    "mpi / gloo at np4": ("tf1-np4-mpi", "tf1-np4", None),
    "estimator np1 / bare loop": ("estimator-np1", "bare", None),
    "estimator / tf1 at np1": ("estimator-np1", "tf1-np1", None),
    "estimator np4 / horovod bare loop np4": ("estimator-np4", "bare-np4",
                                              None),
    "estimator / tf1 at np4": ("estimator-np4", "tf1-np4", None),
    "mwms / tf1 at np1": ("mwms-np1", "tf1-np1", None),
    "mwms / horovod tf2 loop at np1": ("mwms-np1", "tf2-np1-v1", None),
    "mwms / horovod tf2 loop at np2": ("mwms-np2", "tf2-np2", None),
    "mwms / horovod tf2 loop at np4": ("mwms-np4", "tf2-np4", None),
    "mwms np4 / np1 (aggregate)": ("mwms-np4", "mwms-np1", None),
    "mwms / mwms floor at np1": ("mwms-np1", "floor-mwms-np1", None),
    "mwms / mwms floor at np2": ("mwms-np2", "floor-mwms-np2", None),
    "mwms / mwms floor at np4": ("mwms-np4", "floor-mwms-np4", None),
    "horovod tf2 loop / its floor at np2": ("tf2-np2", "floor-tf2-np2", None),
    "horovod tf2 loop / its floor at np4": ("tf2-np4", "floor-tf2-np4", None),
    "mwms fit / horovod fit at np1": ("mwms-fit-np1", "keras-np1", None),
    "mwms fit / horovod fit at np2": ("mwms-fit-np2", "keras-np2", None),
    "mwms fit / horovod fit at np4": ("mwms-fit-np4", "keras-np4", None),
    "mwms floor / horovod tf2 floor at np1": ("floor-mwms-np1",
                                              "floor-tf2-np1", None),
    "mwms floor / horovod tf2 floor at np2": ("floor-mwms-np2",
                                              "floor-tf2-np2", None),
    "mwms floor / horovod tf2 floor at np4": ("floor-mwms-np4",
                                              "floor-tf2-np4", None),
}
CASE_GROUPS = {"default": DEFAULT_CASES, "knobs": KNOB_CASES,
               "keras": ["tf1-np1", "tf1-np4", "keras-np1", "keras-np4"],
               "estimator": ["bare", "bare-np4", "tf1-np1", "tf1-np4",
                             "estimator-np1", "estimator-np4"],
               "eval": [case for pair in EVAL_CASES.items() for case in pair],
               "mwms": ["tf1-np1", "tf1-np2", "tf1-np4", "tf2-np2", "tf2-np4",
                        "mwms-np1", "mwms-np2", "mwms-np4", "floor-tf2-np2",
                        "floor-tf2-np4", "floor-mwms-np2", "floor-mwms-np4"],
               # Every path past Horovod beside Horovod's and the TF1 job,
               # at np 1, 2 and 4.
               "past-horovod": [
                   f"{path}-np{np}" for np in (1, 2, 4)
                   for path in ("tf1", "keras", "mwms", "mwms-fit",
                                "floor-mwms", "floor-tf2")]
               + ["tf2-np1-v1", "tf2-np2", "tf2-np4"],
               "all": DEFAULT_CASES + KNOB_CASES}


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", required=True)
  parser.add_argument("--steps", type=int, default=300,
                      help="measured global steps per run")
  parser.add_argument("--warmup", type=int, default=60,
                      help="global steps run before measuring")
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--cases", default="default",
                      help="comma-separated cases or groups (default, knobs: "
                      "the knobs' cases, all: both, keras, eval, "
                      "estimator, mwms, past-horovod); cases: "
                      + ", ".join(CASES))
  parser.add_argument("--data_dir", help="passed to the trainers")
  parser.add_argument("--trainer_flags", default="",
                      help="more trainer flags for every case, e.g. "
                      "'--intra_op_threads=2' to measure a knob")
  parser.add_argument("--stacks", default="",
                      help="Pythons of other stacks' venvs (comma-separated, "
                      "e.g. .venv-tf1.15.5/bin/python): every case runs on "
                      "each of them too")
  args = parser.parse_args(argv)
  names = args.cases.split(",")
  unknown = sorted(set(names) - set(CASES) - set(CASE_GROUPS))
  args.cases = list(dict.fromkeys(
      case for name in names for case in CASE_GROUPS.get(name, [name])))
  if unknown or min(args.steps, args.warmup, args.repeats) < 1:
    parser.error(f"expected --cases from {', '.join(CASE_GROUPS)}, "
                 f"{', '.join(CASES)} and positive "
                 f"--steps, --warmup, --repeats; got {unknown or ''}")
  args.stacks = [p for p in args.stacks.split(",") if p]
  for python in args.stacks:
    if stacks.problem(python):
      parser.error(f"--stacks: {stacks.problem(python)}")
  return args


def run_case(name, args, work, python=sys.executable):
  """Launches one case with `python`: (aggregate images/sec after the
  warm-up, [peak resident bytes of rank 0, 1, ...], {step: rank 0's time
  when it was recorded})."""
  module, np, flags, launcher = CASES[name]
  model_dir = tempfile.mkdtemp(prefix=f"{name}-", dir=work)
  step_log = os.path.join(model_dir, "steps.jsonl")
  rss_dir = os.path.join(model_dir, "rss")
  os.mkdir(rss_dir)
  total = args.warmup + args.steps
  if launcher is None:
    command = []
  elif launcher == WORKERS:
    command = [python, "-m", "legacy_hvd.launch.workers", "-H",
               f"localhost:{np}", "--"]
  else:
    command = [*stacks.horovodrun(python), *launcher, "-np", str(np), "-H",
               f"localhost:{np}"]
  # Every rank runs under tools/peak_rss.py, which records its peak RSS.
  command += [python, "-m", "tools.peak_rss", rss_dir, module,
              f"--max_steps={total}", f"--step_log={step_log}", *flags]
  if module not in (BARE_LOOP, BARE_LOOP_TF2):
    command += [f"--model_dir={model_dir}", f"--log_every_n_steps={total}",
                f"--save_checkpoints_steps={total}",
                *args.trainer_flags.split()]
  if args.data_dir:
    command.append(f"--data_dir={args.data_dir}")
  process = subprocess.run(command, capture_output=True, text=True,
                           timeout=TIMEOUT_SECONDS)
  if process.returncode:
    sys.exit(f"benchmark: error: case {name} exited {process.returncode}:\n"
             + process.stderr[-2000:])
  with open(step_log) as f:
    # An evaluation's line (test_loss) follows its step's.
    times = {r["step"]: r["time"] for r in map(json.loads, f)
             if "test_loss" not in r}
  peaks = []
  for rank in range(np):
    with open(os.path.join(rss_dir, f"rank-{rank}.json")) as f:
      peaks.append(json.load(f)["peak_rss_bytes"])
  return (args.steps * BATCH_SIZE * np / (times[total] - times[args.warmup]),
          peaks, times)


def step_seconds_between_evaluations(times, first, last, every):
  """Median seconds of the steps first+1..last that do not follow a step
  that is a multiple of `every` (where an evaluation runs, if on)."""
  return statistics.median(times[s] - times[s - 1]
                           for s in range(first + 1, last + 1)
                           if (s - 1) % every)


def evaluation_seconds(times, first, last, every, step_seconds):
  """Median seconds an evaluation adds to the step after it."""
  added = [times[s + 1] - times[s] - step_seconds
           for s in range(first, last) if s % every == 0]
  return statistics.median(added) if added else None


def evaluation_figures(runs_times, args):
  """{eval case: on / off step time between evaluations (ratio of medians),
  the spreads of both, seconds per evaluation}, for the eval cases run."""
  first, last = args.warmup, args.warmup + args.steps
  step_seconds = {label: [step_seconds_between_evaluations(
      times, first, last, EVAL_EVERY) for times in runs]
                  for label, runs in runs_times.items()}
  medians = {label: statistics.median(v) for label, v in step_seconds.items()}
  figures = {}
  for on, off in EVAL_CASES.items():
    if on not in medians or off not in medians:
      continue
    figures[on] = {
        "every_n_steps": EVAL_EVERY,
        "step_seconds_on": medians[on], "step_seconds_off": medians[off],
        "ratio_on_off": medians[on] / medians[off],
        "spread_on": (max(step_seconds[on]) - min(step_seconds[on]))
                     / medians[on],
        "spread_off": (max(step_seconds[off]) - min(step_seconds[off]))
                      / medians[off],
        "seconds_per_evaluation": statistics.median(
            evaluation_seconds(times, first, last, EVAL_EVERY, medians[on])
            for times in runs_times[on])}
  return figures


def evaluation_markdown(figures):
  if not figures:
    return []
  lines = ["", f"Periodic evaluation (every {EVAL_EVERY} steps): training "
           "step time between evaluations, median of the repeats",
           "", "| case | off (ms/step) | on (ms/step) | on / off | spread "
           "off, on | seconds per evaluation |", "|---|---|---|---|---|---|"]
  for on, f in figures.items():
    lines.append(f"| {on} | {f['step_seconds_off'] * 1e3:.1f} | "
                 f"{f['step_seconds_on'] * 1e3:.1f} | "
                 f"{f['ratio_on_off']:.3f} | {f['spread_off']:.1%}, "
                 f"{f['spread_on']:.1%} | {f['seconds_per_evaluation']:.2f} |")
  return lines


def main(argv=None):
  args = parse_args(argv)
  os.makedirs(args.out, exist_ok=True)
  # (label, case, python): this stack's cases, then each other stack's.
  plans = [(name, name, sys.executable) for name in args.cases]
  versions = {python: stacks.tensorflow_version(python)
              for python in [sys.executable] + args.stacks}
  for python in args.stacks:
    plans += [(f"{name}@tf{versions[python]}", name, python)
              for name in args.cases]
  runs = {label: [] for label, _, _ in plans}
  runs_times = {label: [] for label, _, _ in plans}   # rank 0's step times
  peak_rss = {label: [] for label, _, _ in plans}   # per rank, max of repeats
  with tempfile.TemporaryDirectory(prefix="benchmark-") as work:
    for repeat in range(args.repeats):
      for label, name, python in plans:
        rate, peaks, times = run_case(name, args, work, python)
        runs[label].append(rate)
        runs_times[label].append(times)
        peak_rss[label] = [max(pair) for pair in
                           zip(peaks, peak_rss[label] or peaks)]
        print(f"benchmark: repeat {repeat + 1} {label}: {rate:.0f} "
              f"images/sec, peak RSS {_mib(max(peaks))}", flush=True)
  medians = {label: statistics.median(rates) for label, rates in runs.items()}
  # (max - min) / median of each case's repeats: how far to trust a ratio.
  spreads = {label: (max(rates) - min(rates)) / medians[label]
             for label, rates in runs.items()}
  of_bare = ({label: medians[label] / medians["bare"] for label in medians}
             if "bare" in medians else {})
  ratios = {}
  for label, (top, bottom, target) in RATIOS.items():
    if top in medians and bottom in medians:
      value = medians[top] / medians[bottom]
      ratios[label] = {"value": value, "target": target,
                       "met": None if target is None else value >= target}
  for label, name, python in plans[len(args.cases):]:
    ratios[f"{name}: TF {versions[python]} / TF "
           f"{versions[sys.executable]}"] = {
               "value": medians[label] / medians[name], "target": None,
               "met": None}
  report = {"steps": args.steps, "warmup": args.warmup,
            "trainer_flags": args.trainer_flags,
            "tensorflow_versions": {label: versions[python]
                                    for label, _, python in plans},
            "repeats": args.repeats, "batch_size_per_worker": BATCH_SIZE,
            "cpu_count": os.cpu_count(), "images_per_sec": runs,
            "median_images_per_sec": medians, "spread": spreads,
            "fraction_of_bare": of_bare, "peak_rss_bytes_per_rank": peak_rss,
            "ratios": ratios,
            "evaluation": evaluation_figures(runs_times, args)}
  with open(os.path.join(args.out, "benchmark.json"), "w") as f:
    json.dump(report, f, indent=2)
  lines = ["| case | median images/sec | of bare | spread | runs | "
           "peak RSS per rank (MiB) |", "|---|---|---|---|---|---|"]
  lines += [f"| {label} | {medians[label]:.0f} | "
            + (f"{of_bare[label]:.3f}" if of_bare else "-")
            + f" | {spreads[label]:.1%} | "
            + ", ".join(f"{r:.0f}" for r in runs[label]) + " | "
            + ", ".join(f"{b / 2**20:.0f}" for b in peak_rss[label]) + " |"
            for label, _, _ in plans]
  lines += ["", "| ratio | value | target | met |", "|---|---|---|---|"]
  lines += [f"| {label} | {r['value']:.3f} | "
            f"{'-' if r['target'] is None else r['target']} | "
            f"{'-' if r['met'] is None else r['met']} |"
            for label, r in ratios.items()]
  lines += evaluation_markdown(report["evaluation"])
  with open(os.path.join(args.out, "benchmark.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  print("\n".join(lines))


def _mib(n):
  return f"{n / 2**20:.0f} MiB"


if __name__ == "__main__":
  main()
