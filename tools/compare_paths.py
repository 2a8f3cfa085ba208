"""Runs the TF1 and TF2 paths, and stacks, side by side; reports where they differ.

    python tools/compare_paths.py --np 2 --steps 200 --out DIR \
        [--impls v1,keras,keras-eps1e-8,fit,fit-eps1e-8,estimator,mwms,mwms-fit]
    python tools/compare_paths.py --np 2 --steps 200 --out DIR --impls none \
        --stacks .venv-tf1.15.5/bin/python    # the TF1 job on TF 1.15 too
    python tools/compare_paths.py --np 2 --steps 200 --out DIR \
        --impls v1,fit --eval_every_n_steps 50   # held-out curves too
    python tools/compare_paths.py --np 2 --steps 200 --out DIR --impls none \
        --migrate tf1:v1,tf1:fit    # the TF1 job's directory continued

Each path runs under `horovodrun -np N` with the same seed, initial weights
and data order, for the same number of steps, logging every step's loss and,
every --digest_every steps, a digest of the weights: the TF1 job
(legacy_hvd.train), the TF2 loop (legacy_hvd.train_tf2, tf2-<impl>) and
Keras fit (legacy_hvd.train_keras, keras-fit) and the Estimator job
(legacy_hvd.train_estimator, estimator: TF <= 2.15) and the TF2 loop on
tf.distribute's MultiWorkerMirroredStrategy (legacy_hvd.train_mwms, mwms:
its workers started by legacy_hvd.launch.workers, no Horovod) and Keras fit
on it (legacy_hvd.train_mwms_keras, mwms-fit). --stacks adds the TF1
path run by another stack's Python (and the horovodrun beside it), compared
with the TF1 path of this one. Writes
  DIR/report.json   every figure below, machine-readable
  DIR/report.md     side-by-side table: final loss, test accuracy, images/sec,
                    max and mean |loss difference|, first step beyond the
                    tolerance, max |final weight difference|, and the cause
  DIR/curves.png    both loss curves and their difference (matplotlib)
With --eval_every_n_steps N every path also scores the test set every N
steps (and at the end), across its ranks, and the report adds
  report.md         held-out accuracy and loss of every path at each
                    evaluation, and whether each equals the TF1 job's
  DIR/held_out.png  the held-out accuracy and loss curves side by side

--migrate FROM:TO trains FROM (tf1 or an --impls name) to --migrate_at,
continues its model directory with TO (which converts the checkpoint,
legacy_hvd/checkpoints/migration.py) to --steps, and compares that run with the
uninterrupted tf1 one (run_migration).

The runs themselves stay in DIR/<path>/ (checkpoints, results.json,
steps.jsonl).
Any other trainer flag can follow `--`, e.g. `-- --data_dir=... --optimizer=sgd`.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

from tools import stacks

TOLERANCE = 1e-4          # absolute, on per-step loss and final weights
TIMEOUT_SECONDS = 1800    # one horovodrun job
# With one intra-op thread, TF1's DirectSession and TF2's function runtime
# run single-threaded kernels that round differently (an ulp of the loss by
# step 4, amplified by Adam's first steps); from two threads on, the paths
# are bitwise identical. Measured with this tool (docs/tf1-vs-tf2.md).
PARITY_THREADS = 2
EXACT_FLOOR = 1e-12       # where a zero difference is drawn on the log axis
# Why a path may part from the TF1 one, keyed by (implementation, optimizer).
CAUSES = {
    ("keras", "adam"): "Keras Adam's default epsilon is 1e-7, ten times "
                       "tf.compat.v1.train.AdamOptimizer's 1e-8 (the "
                       "difference shows from step 2). With epsilon matched "
                       "(the keras-eps1e-8 run) a smaller gap remains: v1 "
                       "keeps beta1^t and beta2^t as running float32 "
                       "products, Keras recomputes them with pow(beta, t), "
                       "and the two round differently from a few steps on.",
    ("keras", "momentum"): "Keras SGD folds the learning rate into the "
                           "momentum velocity, v1 MomentumOptimizer applies "
                           "it after; they agree only while the rate is "
                           "constant (not during warm-up).",
}
# Why the Keras fit variant parts from the TF1 job, keyed by optimizer. What
# does not part them: MetricAverageCallback averages only the epoch-end logs
# (TensorBoard's), never a weight; BroadcastGlobalVariablesCallback runs after
# the first step, when every rank already holds the same initial values (same
# seed; a resumed run is broadcast before fit); fit's steps_per_epoch is the
# other paths' epoch over the same endless stream, so the steps and batches
# are the same ones.
FIT_CAUSES = {
    "adam": "the optimizer, not fit: Keras Adam's default epsilon is 1e-7, "
            "ten times tf.compat.v1.train.AdamOptimizer's 1e-8 (from step "
            "2). With epsilon matched (the keras-fit-eps1e-8 run) a smaller "
            "gap remains from the update rule: the legacy Keras Adam runs "
            "the same ApplyAdam kernel but recomputes beta1^t and beta2^t "
            "with pow(beta, t) where v1 keeps running float32 products. "
            "Horovod's callbacks change no weight: MetricAverageCallback "
            "averages only the epoch-end logs, and the broadcast after the "
            "first step finds every rank with the same weights.",
    "momentum": "Keras SGD folds the learning rate into the momentum "
                "velocity, v1 MomentumOptimizer applies it after; they agree "
                "only while the rate is constant (not during warm-up).",
}
# Why the TF1 job on two TensorFlows parts (measured with this tool and
# per-op comparisons; docs/stacks.md, "How close the stacks are").
STACK_CAUSE = (
    "different CPU kernels, not different math: both stacks build the same "
    "graph and feed it bitwise-equal data order, augmentation, normalized "
    "pixels and initial weights (all stateless draws). TF 2's "
    "SparseSoftmaxCrossEntropyWithLogits kernel rounds the per-example loss "
    "differently from TF 1.15's (up to 2.4e-7), which changes the gradients "
    "in their last bits; with oneDNN on (TF 2's default on x86, "
    "TF_ENABLE_ONEDNN_OPTS=1) MatMul and the convolution's gradient round "
    "differently too. Adam's first steps amplify these ulps.")


# The TF2 loop on tf.distribute, no Horovod: its workers started by
# legacy_hvd.launch.workers instead of horovodrun.
MWMS = "legacy_hvd.train_mwms"
MWMS_FIT = "legacy_hvd.train_mwms_keras"   # Keras fit on the same strategy
# Why it may part from the Horovod paths (docs/tf1-vs-tf2.md, "Past
# Horovod"; measured with this tool).
MWMS_CAUSE = (
    "the reduction, in float order only: the strategy sums each worker's "
    "gradient of its loss divided by the number of workers, Horovod "
    "averages the workers' gradients; the same numbers up to the order of "
    "the additions (a ring over gRPC against Gloo's), and at np=2 the same "
    "bits (a division by 2 is exact).")
# --impls: run name, module, trainer flags.
IMPLS = {
    "v1": ("tf2-v1", "legacy_hvd.train_tf2", ["--optimizer_impl=v1"]),
    "keras": ("tf2-keras", "legacy_hvd.train_tf2", ["--optimizer_impl=keras"]),
    "keras-eps1e-8": ("tf2-keras-eps1e-8", "legacy_hvd.train_tf2",
                      ["--optimizer_impl=keras", "--adam_epsilon=1e-8"]),
    "fit": ("keras-fit", "legacy_hvd.train_keras", []),
    "fit-eps1e-8": ("keras-fit-eps1e-8", "legacy_hvd.train_keras",
                    ["--adam_epsilon=1e-8"]),
    "estimator": ("estimator", "legacy_hvd.train_estimator", []),
    "mwms": ("mwms", MWMS, ["--optimizer_impl=v1"]),
    "mwms-fit": ("mwms-fit", MWMS_FIT, []),
}
# --migrate: tf1 and the --impls names.
PATHS = dict(IMPLS, tf1=("tf1", "legacy_hvd.train", []))
# Paths whose checkpoints hold the TF1 job's variable names.
NAME_BASED = {"legacy_hvd.train", "legacy_hvd.train_estimator"}


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--np", type=int, default=2, help="processes per path")
  parser.add_argument("--steps", type=int, default=200, help="global steps")
  parser.add_argument("--out", required=True, help="new or empty directory")
  parser.add_argument("--impls", default="v1,keras,fit,fit-eps1e-8",
                      help="TF2 variants to run, comma-separated: the TF2 "
                      "loop with optimizer v1, keras, keras-eps1e-8 (Keras "
                      "Adam with v1's epsilon); Keras fit: fit, fit-eps1e-8; "
                      "the Estimator job: estimator; the TF2 loop on "
                      "MultiWorkerMirroredStrategy: mwms, and Keras fit "
                      "on it: mwms-fit; "
                      "none: no TF2 path run")
  parser.add_argument("--stacks", default="",
                      help="Pythons of other stacks' venvs (comma-separated, "
                      "e.g. .venv-tf1.15.5/bin/python): the TF1 path runs "
                      "with each of them too")
  parser.add_argument("--onednn", choices=("default", "off"),
                      default="default", help="off: TF_ENABLE_ONEDNN_OPTS=0 "
                      "in every run (TF 2's oneDNN CPU kernels off; TF 1.15 "
                      "has none)")
  parser.add_argument("--seed", type=int, default=1234)
  parser.add_argument("--digest_every", type=int, default=None,
                      help="steps between weight digests (default steps/4)")
  parser.add_argument("--tolerance", type=float, default=TOLERANCE)
  parser.add_argument("--threads", type=int, default=PARITY_THREADS,
                      help="TF intra- and inter-op threads per rank, the same "
                      "in both paths (see PARITY_THREADS)")
  add_held_out_args(parser)
  parser.add_argument("--migrate", default="",
                      help="FROM:TO pairs, comma-separated, FROM and TO tf1 "
                      "or --impls names: FROM trains to --migrate_at, TO "
                      "resumes its model directory")
  parser.add_argument("--migrate_at", type=int, default=None,
                      help="the step of the move (default steps/2)")
  parser.add_argument("--migrate_python", default=sys.executable,
                      help="the Python (stack) that runs TO, e.g. "
                      ".venv/bin/python from the TF 1.15 venv")
  parser.add_argument("trainer_flags", nargs="*",
                      help="after --: flags passed to both trainers")
  args = parser.parse_args(argv)
  impls = [] if args.impls == "none" else args.impls.split(",")
  unknown = set(impls) - set(IMPLS)
  if unknown or args.np < 1 or args.steps < 1:
    parser.error(f"expected --np and --steps >= 1 and --impls from "
                 f"{', '.join(IMPLS)}; got --np={args.np} --steps={args.steps} "
                 f"--impls={args.impls}")
  if os.path.exists(args.out) and os.listdir(args.out):
    parser.error(f"--out={args.out}: not empty; expected a new or empty "
                 "directory (the tool never overwrites earlier runs)")
  args.impls = impls
  args.migrate = [p for p in args.migrate.split(",") if p]
  bad = [p for p in args.migrate
         if len(p.split(":")) != 2 or set(p.split(":")) - set(PATHS)]
  if bad:
    parser.error(f"--migrate={','.join(bad)}: expected FROM:TO pairs of "
                 f"{', '.join(PATHS)}")
  args.migrate_at = args.migrate_at or args.steps // 2
  args.stacks = [p for p in args.stacks.split(",") if p]
  for python in args.stacks:
    if stacks.problem(python):
      parser.error(f"--stacks: {stacks.problem(python)}")
  args.digest_every = args.digest_every or max(1, args.steps // 4)
  return args


def run_path(name, module, extra, args, python=sys.executable):
  """Runs one path; returns its directory. Raises SystemExit on failure."""
  run_dir = os.path.join(args.out, name)
  flags = [f"--max_steps={args.steps}", f"--seed={args.seed}",
           f"--model_dir={run_dir}",
           f"--step_log={os.path.join(args.out, name + '.steps.jsonl')}",
           f"--log_every_n_steps={args.digest_every}",
           f"--save_checkpoints_steps={args.steps}",
           f"--intra_op_threads={args.threads}",
           f"--inter_op_threads={args.threads}", *held_out_flags(args),
           *extra, *args.trainer_flags]
  hosts = ["-H", f"localhost:{args.np}"]
  launcher = ([python, "-m", "legacy_hvd.launch.workers", *hosts, "--"]
              if module in (MWMS, MWMS_FIT) else
              [*stacks.horovodrun(python), "--gloo", "-np", str(args.np),
               *hosts])
  command = [*launcher, python, "-m", module, *flags]
  env = dict(os.environ)
  if args.onednn == "off":
    env["TF_ENABLE_ONEDNN_OPTS"] = "0"
  print(f"compare_paths: running {name}: {' '.join(command)}", flush=True)
  with open(os.path.join(args.out, name + ".log"), "w") as log:
    process = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,
                             timeout=TIMEOUT_SECONDS, env=env)
  if process.returncode:
    sys.exit(f"compare_paths: error: the {name} run exited with "
             f"{process.returncode}; see {log.name}")
  return run_dir


def run_migration(pair, args):
  """--migrate FROM:TO: FROM trains to --migrate_at, TO (on
  --migrate_python's stack) continues its model directory to --steps; one
  run, its steps those of both, to compare with the uninterrupted tf1 run."""
  source, target = (PATHS[p] for p in pair.split(":"))
  name = f"{source[0]}-to-{target[0]}"
  run_dir = os.path.join(args.out, name)
  run_path(name + ".before", source[1], [
      *source[2], f"--max_steps={args.migrate_at}", f"--model_dir={run_dir}"],
           args)
  run_path(name, target[1], target[2], args, args.migrate_python)
  run = collect(name, run_dir, os.path.join(args.out, name + ".steps.jsonl"),
                target[1] not in NAME_BASED)
  run["steps"] = {
      **read_steps(os.path.join(args.out, name + ".before.steps.jsonl")),
      **run["steps"]}
  # What parts the moved run from the TF1 job is TO's optimizer, as in the
  # side-by-side runs, and nothing of the move where TO's is the same.
  optimizer = run["results"]["flags"]["optimizer"]
  run["cause"] = (FIT_CAUSES.get(optimizer) if target[1].endswith("keras")
                  else CAUSES.get((run["results"]["flags"]["optimizer_impl"],
                                   optimizer)))
  return run


def read_steps(path):
  """{step: its training step's line}; evaluations' lines (test_loss, no
  loss) are left out: they are in results.json's evaluations."""
  with open(path) as f:
    records = [json.loads(line) for line in f]
  return {r["step"]: r for r in records if "loss" in r}


def final_weights(run_dir, tf2):
  import tensorflow as tf
  from legacy_hvd.model import cnn
  reader = tf.train.load_checkpoint(run_dir)
  key = ((lambda n: n.replace("/", "_") + "/.ATTRIBUTES/VARIABLE_VALUE")
         if tf2 else (lambda n: n))
  return {name: reader.get_tensor(key(name)) for name in cnn.PARAM_SHAPES}


def compare(reference, other, tolerance):
  """Figures for one TF2 run against the TF1 run."""
  steps = sorted(set(reference["steps"]) & set(other["steps"]))
  diffs = np.array([abs(reference["steps"][s]["loss"] - other["steps"][s]["loss"])
                    for s in steps])
  beyond = [s for s, d in zip(steps, diffs) if d > tolerance]
  digest_steps = [s for s in steps if "weight_digest" in reference["steps"][s]
                  and "weight_digest" in other["steps"][s]]
  digest_diff = max((float(np.max(np.abs(
      np.subtract(reference["steps"][s]["weight_digest"],
                  other["steps"][s]["weight_digest"])))) for s in digest_steps),
                    default=None)
  weight_diff = max(float(np.max(np.abs(reference["weights"][n] -
                                        other["weights"][n])))
                    for n in reference["weights"])
  return {
      "steps_compared": len(steps),
      "identical_loss_steps": int(np.sum(diffs == 0)),
      "max_abs_loss_diff": float(diffs.max()),
      "mean_abs_loss_diff": float(diffs.mean()),
      "first_step_beyond_tolerance": beyond[0] if beyond else None,
      "max_abs_weight_digest_diff": digest_diff,
      "digest_steps": digest_steps,
      "max_abs_final_weight_diff": weight_diff,
      "within_tolerance": not beyond and weight_diff <= tolerance,
  }


def collect(name, run_dir, steps_path, tf2):
  with open(os.path.join(run_dir, "results.json")) as f:
    results = json.load(f)
  return {"name": name, "results": results, "steps": read_steps(steps_path),
          "weights": final_weights(run_dir, tf2)}


def write_markdown(path, report):
  runs = report["runs"]
  header = "| | " + " | ".join(r["name"] for r in runs) + " |"
  rows = [header, "|---" * (len(runs) + 1) + "|"]

  def row(label, values):
    rows.append(f"| {label} | " + " | ".join(values) + " |")

  row("TensorFlow", [r["tensorflow_version"] for r in runs])
  row("final train loss (rank 0)",
      [f"{r['final_train_loss']:.6f}" for r in runs])
  row("test accuracy", [f"{r['test_accuracy']:.4f}" for r in runs])
  row("images/sec", [f"{r['images_per_sec']:.0f}" for r in runs])
  for key, label, fmt in (
      ("max_abs_loss_diff", "max abs loss diff vs tf1", "{:.3g}"),
      ("mean_abs_loss_diff", "mean abs loss diff vs tf1", "{:.3g}"),
      ("identical_loss_steps", "steps with bitwise-equal loss", "{}"),
      ("first_step_beyond_tolerance", "first step beyond tolerance", "{}"),
      ("max_abs_final_weight_diff", "max abs final weight diff", "{:.3g}"),
      ("within_tolerance", "within tolerance", "{}")):
    row(label, ["-"] + [fmt.format(c[key]) for c in report["comparisons"]])
  lines = [f"# TF1 vs TF2 paths and stacks: np={report['np']}, "
           f"{report['steps']} steps, seed {report['seed']}, "
           f"{report['threads_per_rank']} TF threads per rank, oneDNN "
           f"{report['onednn']}, tolerance {report['tolerance']}", "",
           *rows, ""]
  for comparison in report["comparisons"]:
    bitwise = (comparison["identical_loss_steps"]
               == comparison["steps_compared"])
    beyond = comparison["first_step_beyond_tolerance"]
    verdict = ("agrees with tf1 bit for bit" if bitwise else
               "agrees with tf1 within tolerance" if
               comparison["within_tolerance"] else
               f"diverges from tf1 from step {beyond}" if beyond else
               "agrees with tf1 on every step's loss within tolerance, but "
               "its final weights differ by "
               f"{comparison['max_abs_final_weight_diff']:.3g}")
    lines.append(f"- **{comparison['name']}** {verdict}."
                 + (f" Cause: {comparison['cause']}" if comparison["cause"]
                    and not bitwise else ""))
  with open(path, "w") as f:
    f.write("\n".join(lines) + "\n")


def plot(path, report, runs):
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  figure, (top, bottom) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
  # One colour per run in both panels.
  for index, run in enumerate(runs):
    steps = sorted(run["steps"])
    top.plot(steps, [run["steps"][s]["loss"] for s in steps], label=run["name"],
             linewidth=1, color=f"C{index}")
  reference = runs[0]
  for index, run in enumerate(runs[1:], start=1):
    steps = sorted(set(run["steps"]) & set(reference["steps"]))
    diff = [abs(run["steps"][s]["loss"] - reference["steps"][s]["loss"])
            for s in steps]
    bottom.plot(steps, np.maximum(diff, EXACT_FLOOR),
                label=f"|{run['name']} - tf1|", linewidth=1, color=f"C{index}")
  bottom.axhline(report["tolerance"], color="gray", linestyle="--",
                 label=f"tolerance {report['tolerance']:g}")
  top.set_ylabel("training loss (rank 0)")
  top.set_title(f"Horovod paths and stacks: np={report['np']}, "
                f"{report['steps']} steps, seed {report['seed']}")
  top.legend()
  bottom.set_yscale("log")
  bottom.set_xlabel("global step")
  bottom.set_ylabel(f"|loss difference| (0 drawn at {EXACT_FLOOR:g})")
  bottom.legend()
  figure.tight_layout()
  figure.savefig(path, dpi=100)
  plt.close(figure)


# The held-out curves: every path's periodic evaluation (--eval_every_n_steps).

def add_held_out_args(parser):
  def steps(value):
    if not value.isdigit():
      raise argparse.ArgumentTypeError(
          f"{value!r}: expected 0 or a positive integer")
    return int(value)
  parser.add_argument("--eval_every_n_steps", type=steps, default=0,
                      help="every path scores the test set every this many "
                      "steps (and at the end); 0: only at the end, no "
                      "held-out table or plot")


def held_out_flags(args):
  """The trainer flags of a run for the held-out curves."""
  return ([f"--eval_every_n_steps={args.eval_every_n_steps}"]
          if args.eval_every_n_steps else [])


def held_out_report(runs):
  """{"steps": [...], "paths": {name: {"accuracy": [...], "loss": [...]}},
  "equal_to_tf1": {name: bool}}: every path's evaluations (results.json's
  history), by the steps all paths evaluated at."""
  histories = {run["name"]: {e["step"]: e for e in
                             run["results"].get("evaluations", [])}
               for run in runs}
  steps = sorted(set.intersection(*(set(h) for h in histories.values())))
  paths = {name: {key: [history[s][key] for s in steps]
                  for key in ("accuracy", "loss")}
           for name, history in histories.items()}
  reference = paths[runs[0]["name"]]
  return {"steps": steps, "paths": paths,
          "equal_to_tf1": {name: values == reference
                           for name, values in paths.items()
                           if name != runs[0]["name"]}}


def held_out_markdown(report):
  held_out = report["held_out"]
  names = list(held_out["paths"])
  lines = ["", "## Held-out accuracy (loss) at each evaluation, summed "
           "over the ranks' test shards", "",
           "| step | " + " | ".join(names) + " |",
           "|---" * (len(names) + 1) + "|"]
  for index, step in enumerate(held_out["steps"]):
    lines.append(f"| {step} | " + " | ".join(
        f"{held_out['paths'][n]['accuracy'][index]:.4f} "
        f"({held_out['paths'][n]['loss'][index]:.4f})" for n in names) + " |")
  lines.append("")
  for name, equal in held_out["equal_to_tf1"].items():
    lines.append(f"- **{name}**: held-out accuracy and loss "
                 + ("equal to tf1's at every evaluation." if equal else
                    "differ from tf1's (its weights differ; see above)."))
  return "\n".join(lines) + "\n"


def plot_held_out(path, report):
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  held_out = report["held_out"]
  steps = held_out["steps"]
  figure, (top, middle, bottom) = plt.subplots(3, 1, figsize=(9, 9),
                                               sharex=True)
  # One colour per run, as in curves.png; equal curves overlap, so each
  # later one is drawn thinner and dashed, and the bottom panel shows how
  # far each is from tf1's.
  names = list(held_out["paths"])
  reference = held_out["paths"][names[0]]
  for index, name in enumerate(names):
    values = held_out["paths"][name]
    style = dict(label=name, color=f"C{index}", marker="o",
                 linewidth=2.5 if index == 0 else 1,
                 linestyle="-" if index == 0 else "--")
    top.plot(steps, values["accuracy"], **style)
    middle.plot(steps, values["loss"], **style)
    if index:
      diff = np.abs(np.subtract(values["accuracy"], reference["accuracy"]))
      bottom.plot(steps, np.maximum(diff, EXACT_FLOOR), marker="o",
                  label=f"|{name} - {names[0]}|", linewidth=1,
                  color=f"C{index}")
  top.set_ylabel("held-out accuracy")
  top.set_title(f"Held-out curves: np={report['np']}, {report['steps']} "
                f"steps, seed {report['seed']}, the whole test set")
  top.legend()
  middle.set_ylabel("held-out loss")
  middle.legend()
  bottom.set_yscale("log")
  bottom.set_xlabel("global step")
  bottom.set_ylabel(f"|accuracy difference| (0 drawn at {EXACT_FLOOR:g})")
  bottom.legend()
  figure.tight_layout()
  figure.savefig(path, dpi=100)
  plt.close(figure)


def main(argv=None):
  args = parse_args(argv)
  os.makedirs(args.out, exist_ok=True)
  plans = [("tf1", "legacy_hvd.train", [], False, sys.executable)]
  for impl in args.impls:
    name, module, extra = IMPLS[impl]
    plans.append((name, module, extra, module not in NAME_BASED,
                  sys.executable))
  for python in args.stacks:
    plans.append((f"tf1-tf{stacks.tensorflow_version(python)}",
                  "legacy_hvd.train", [], False, python))
  runs = []
  for name, module, extra, tf2, python in plans:
    run_dir = run_path(name, module, extra, args, python)
    runs.append(collect(name, run_dir,
                        os.path.join(args.out, name + ".steps.jsonl"), tf2))
  runs += [run_migration(pair, args) for pair in args.migrate]

  optimizer = runs[0]["results"]["flags"]["optimizer"]
  comparisons = []
  for run in runs[1:]:
    figures = compare(runs[0], run, args.tolerance)
    if "cause" in run:   # a --migrate run
      cause = run["cause"]
    elif run["results"]["path"] == "tf1":   # the same job on another stack
      cause = STACK_CAUSE
    elif run["results"]["path"] in ("keras-fit", "mwms-fit"):
      cause = FIT_CAUSES.get(optimizer)
    elif run["results"]["path"] == "mwms":
      cause = MWMS_CAUSE
    else:
      cause = CAUSES.get((run["results"]["flags"]["optimizer_impl"],
                          optimizer))
    figures.update(name=run["name"], cause=cause)
    comparisons.append(figures)
  report = {
      "np": args.np, "steps": args.steps, "seed": args.seed,
      "threads_per_rank": args.threads,
      "tolerance": args.tolerance, "optimizer": optimizer,
      "onednn": args.onednn,
      "runs": [dict(name=r["name"], **{k: r["results"][k] for k in (
          "final_train_loss", "test_accuracy", "images_per_sec", "steps",
          "weights_in_sync", "tensorflow_version")}) for r in runs],
      "comparisons": comparisons,
  }
  with open(os.path.join(args.out, "report.json"), "w") as f:
    json.dump(report, f, indent=2)
  if args.eval_every_n_steps:
    report["held_out"] = held_out_report(runs)
    with open(os.path.join(args.out, "report.json"), "w") as f:
      json.dump(report, f, indent=2)
  write_markdown(os.path.join(args.out, "report.md"), report)
  plot(os.path.join(args.out, "curves.png"), report, runs)
  if args.eval_every_n_steps:
    with open(os.path.join(args.out, "report.md"), "a") as f:
      f.write(held_out_markdown(report))
    plot_held_out(os.path.join(args.out, "held_out.png"), report)
  print(open(os.path.join(args.out, "report.md")).read())


if __name__ == "__main__":
  main()
