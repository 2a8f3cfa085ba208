"""The Slurm early warning as a job starts, repeated on the test hosts: the
case of issue 63, the warning that comes while the launcher, srun or the
ranks are still starting.

    python -m tools.slurm_warning --out DIR [--repeats 10] [--delays 0]
        [--steps 20] [--signal USR1|INT|HUP]

Each time: `sbatch -N 2 --ntasks-per-node=2 slurm/train.sbatch` (np=4 on two
hosts, --deterministic, --steps steps); as soon as Slurm says the job is
RUNNING, plus a delay, its batch shell is warned as `--signal=B:USR1@N`
warns it (`scancel --batch --signal=USR1`); then the job is followed to its
end. A row holds: the delay asked and the one measured (from the first
poll that saw RUNNING); the job's final state and Restarts (scontrol); the
launcher's line on the warning; the step the ranks stopped at (`-`: the
warning came before any rank started) and the step the rerun resumed from;
and `kept`. For the warning (SIGUSR1): the job was requeued once, resumed
where the ranks stopped (or at 0 when none had started), and ended
COMPLETED. For a person's stop (`--signal INT` or `HUP` to the batch
shell): the launcher said so, nothing was requeued, and the ranks stopped
at an agreed step or never started.

Brings up its own test hosts and Slurm (tools/testhosts.py,
tools/testslurm.py) in a free slot and takes them down, failures included.
One heavy job at a time on this machine. Writes DIR/report.md and
DIR/report.json; each job's output stays in DIR/<job>.out.
"""
import argparse
import json
import os
import re
import shutil
import sys
import time

from legacy_hvd.data import embedded
from tools import signal_moments
from tools import testhosts
from tools import testslurm

JOB_TIMEOUT = 300    # seconds from sbatch to out of squeue, requeue included
POLL_SECONDS = 0.01  # how often the job's state is read until it runs
WAITING = ("PENDING", "CONFIGURING")


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", required=True)
  parser.add_argument("--repeats", type=int, default=10)
  parser.add_argument("--delays", default="0",
                      help="seconds after RUNNING, comma-separated")
  parser.add_argument("--steps", type=int, default=20)
  parser.add_argument("--signal", choices=("USR1", "INT", "HUP"),
                      default="USR1")
  args = parser.parse_args(argv)
  try:
    args.delays = [float(d) for d in args.delays.split(",")]
  except ValueError:
    parser.error("--delays: {}: expected seconds, e.g. 0,0.5,3".format(
        args.delays))
  if args.repeats < 1 or args.steps < 1 or min(args.delays) < 0:
    parser.error("--repeats and --steps: expected >= 1; --delays >= 0")
  return args


def put_data(cluster):
  """The generated CIFAR-10 stand-in on every host's scratch disk; its path
  as the hosts see it."""
  source = embedded.ensure_generated(os.path.join(cluster.dir, "dataset"))
  for host in cluster.hosts:
    target = os.path.join(host.scratch, "data", "cifar-10-batches-bin")
    if not os.path.isdir(target):
      shutil.copytree(source, target)
  return os.path.join(cluster.scratch, "data", "cifar-10-batches-bin")


def warned_job(slurm, name, delay, data_dir, steps, signal_name):
  """Submits, warns and follows one job; (row, its output)."""
  scratch = slurm.cluster.scratch
  output_path = os.path.join(scratch, name + ".out")
  job = slurm.run(
      ["sbatch", "--parsable", "-N", "2", "--ntasks-per-node=2",
       "--job-name=" + name, "-o", output_path, "slurm/train.sbatch",
       "--data_dir=" + data_dir, "--model_dir=" + os.path.join(scratch, name),
       "--deterministic", "--max_steps={}".format(steps),
       "--log_every_n_steps=1"], check=True).stdout.strip().split(";")[0]
  deadline = time.monotonic() + JOB_TIMEOUT
  while slurm.job(job).get("JobState") in WAITING:
    if time.monotonic() > deadline:
      raise SystemExit("slurm_warning: job {} never ran".format(job))
    time.sleep(POLL_SECONDS)
  running = time.monotonic()
  time.sleep(delay)
  slurm.run(["scancel", "--batch", "--signal=" + signal_name, job])
  warned = time.monotonic() - running
  while slurm.queued(job):
    if time.monotonic() > deadline:
      slurm.run(["scancel", job])
      break
    time.sleep(1)
  state = slurm.job(job)
  output = ""
  if os.path.exists(slurm.controller.path(output_path)):   # none: FAILED
    with open(slurm.controller.path(output_path)) as f:   # at its start
      output = f.read()
  return judge(name, signal_name, delay, warned, state, output), output


def judge(name, signal_name, delay, warned, state, output):
  """The row of one job from its final state and its output."""
  first, _, rerun = output.partition(", restart 1:")
  requeue = re.search(r"job \d+: (.*requeueing.*)", first)
  stop = re.search(r"job \d+: (.*(not requeued|no rank was started).*)",
                   output)
  row = dict(job=name, signal=signal_name, delay=delay,
             warned_after=round(warned, 3),
             state=state.get("JobState", "?"),
             restarts=state.get("Restarts", "?"),
             launcher=(requeue or stop).group(1) if requeue or stop else "-",
             stopped_at=signal_moments.stopped_step(first),
             resumed_at=signal_moments.resumed_step(rerun) if rerun else None)
  if signal_name == "USR1":
    row["kept"] = (row["state"] == "COMPLETED" and row["restarts"] == "1"
                   and bool(requeue) and row["resumed_at"] ==
                   (row["stopped_at"] or 0))
  else:
    row["kept"] = (row["restarts"] == "0" and not requeue and bool(stop) and
                   (row["stopped_at"] is not None or
                    "no rank was started" in stop.group(1)))
  return row


def report(rows, out):
  columns = ("job", "signal", "delay", "warned_after", "state", "restarts",
             "stopped_at", "resumed_at", "kept", "launcher")
  lines = ["| " + " | ".join(columns) + " |",
           "|" + " --- |" * len(columns)]
  for row in rows:
    lines.append("| " + " | ".join(
        "yes" if row[c] is True else "no" if row[c] is False else
        "-" if row[c] is None else str(row[c]) for c in columns) + " |")
  kept = sum(row["kept"] for row in rows)
  lines.append("")
  lines.append("{} of {} kept".format(kept, len(rows)))
  with open(os.path.join(out, "report.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  with open(os.path.join(out, "report.json"), "w") as f:
    json.dump(rows, f, indent=1)
  return kept


def main(argv=None):
  args = parse_args(sys.argv[1:] if argv is None else argv)
  os.makedirs(args.out, exist_ok=True)
  rows = []
  with testhosts.Cluster(hosts=2) as cluster, \
      testslurm.Slurm(cluster) as slurm:
    data_dir = put_data(cluster)
    for delay in args.delays:
      for repeat in range(args.repeats):
        name = "{}-{}-{}".format(args.signal.lower(), delay, repeat)
        row, output = warned_job(slurm, name, delay, data_dir, args.steps,
                                 args.signal)
        with open(os.path.join(args.out, name + ".out"), "w") as f:
          f.write(output)
        rows.append(row)
        print(row, flush=True)
  kept = report(rows, args.out)
  print("slurm_warning: {} of {} kept; {}".format(
      kept, len(rows), os.path.join(args.out, "report.md")))
  return 0 if kept == len(rows) else 1


if __name__ == "__main__":
  sys.exit(main())
