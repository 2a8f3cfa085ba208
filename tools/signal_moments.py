"""A stop signal at each moment of a local job, under each local launcher:
what the job did, and whether the same command then ends it as if it had
never been stopped.

    python -m tools.signal_moments --out DIR [--launchers horovodrun,supervise,workers]
        [--signals TERM,INT,USR1,HUP] [--moments start+0.5,start+3,step:10,final]
        [--to launcher|group] [--repeats 2] [--steps 20] [--data_dir D]
        (default data: the generated stand-in, made in DIR/data)

For each launcher: one run to --steps, the reference; then, for each signal,
moment and repeat, a run in a new model directory that gets the signal at
that moment, and the same command again. A moment is `start+S` (S seconds
after the launcher started: before the ranks exist, while they import
TensorFlow, before hvd.init), `step:N` (rank 0 logged step N), `save:N`
(its checkpoint at step N is being written), `eval:N` (the periodic
evaluation at step N is due; the runs evaluate every 10 steps) or `final`
(the last step logged: the final save, evaluation and results to come).
The signal goes to the launcher alone, as a scheduler sends it (`--to
launcher`), or to its whole process group, as a terminal sends Ctrl-C and
its hang-up (`--to group`).

A row holds: the first run's exit code; the step every rank agreed to stop
at (rank 0's `Stopped by ...` line; `-` when none); the latest checkpoint;
a traceback of a rank or of the project's launchers (horovodrun's own are
its), or a process of the job left behind 30 s after it ended (either
fails the row); the second run's first step (`Resuming from
global step N`, else 0) and whether its weights equal the reference's bit
for bit (--deterministic). `kept` is yes when nothing failed: the job
ended, kept what it had, and the same command finished it exactly. A first
run that had already finished (results.json) needs no second; if the
signal came before rank 0 logged the last step, it was lost (the job ran
on to its end, with its launcher or without).

Writes DIR/report.md (the table) and DIR/report.json; every run's output
stays in DIR/<launcher>/<run>/job.log. One job at a time on this host.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

import psutil

from legacy_hvd.data import embedded
from tools import stacks

NP = 2
TIMEOUT = 240          # a run that has not ended by then is a hang: killed
LEFTOVER_SECONDS = 30  # for every process of an ended run to be gone
TRAINERS = {"horovodrun": "legacy_hvd.train", "supervise": "legacy_hvd.train",
            "workers": "legacy_hvd.train_mwms"}
MOMENT = re.compile(r"^(start\+\d+(\.\d+)?|(step|save|eval):\d+|final)$")


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", required=True)
  parser.add_argument("--launchers", default="horovodrun,supervise,workers")
  parser.add_argument("--signals", default="TERM,INT,USR1,HUP")
  parser.add_argument("--moments", default="start+0.5,start+3,step:10,final")
  parser.add_argument("--to", choices=("launcher", "group"), default="launcher")
  parser.add_argument("--repeats", type=int, default=1)
  parser.add_argument("--steps", type=int, default=20)
  parser.add_argument("--data_dir", default="")
  args = parser.parse_args(argv)
  args.launchers = args.launchers.split(",")
  args.signals = args.signals.split(",")
  args.moments = args.moments.split(",")
  for name in args.launchers:
    if name not in TRAINERS:
      parser.error(f"--launchers: {name}: expected some of {', '.join(TRAINERS)}")
  for name in args.signals:
    if not hasattr(signal, "SIG" + name):
      parser.error(f"--signals: {name}: expected signal names, e.g. TERM,INT")
  for moment in args.moments:
    if not MOMENT.match(moment):
      parser.error(f"--moments: {moment}: expected start+S, step:N, save:N, "
                   "eval:N or final")
  return args


def command(launcher, model_dir, args):
  job = ["-m", TRAINERS[launcher], "--batch_size=64", "--deterministic",
         f"--max_steps={args.steps}", "--log_every_n_steps=1",
         "--save_checkpoints_steps=10", "--eval_every_n_steps=10",
         f"--model_dir={model_dir}"]
  job += [f"--data_dir={args.data_dir}"] if args.data_dir else []
  python = sys.executable
  hosts = ["-H", f"localhost:{NP}"]
  if launcher == "horovodrun":
    return stacks.horovodrun(python) + ["-np", str(NP), *hosts, python, *job]
  module = {"supervise": "legacy_hvd.launch.supervise",
            "workers": "legacy_hvd.launch.workers"}[launcher]
  return [python, "-m", module, *hosts, "--", python, *job]


def moment_line(moment, steps):
  """The regular expression of rank 0's line that makes `moment`, or None
  for a time after the start. save:N is the graph job's own line (under
  horovodrun and the supervisor); eval:N is the step the evaluation is
  due after."""
  if moment.startswith("start+"):
    return None
  kind, _, step = moment.partition(":")
  if kind == "save":
    return rf"Saving checkpoints for {step} into"
  return rf"\bstep {step or steps}: "


def run(launcher, run_dir, args, stop=None):
  """One run of the job; with stop=(signal name, moment), that signal at
  that moment. Returns its record."""
  os.makedirs(run_dir, exist_ok=True)
  model_dir = os.path.join(run_dir, "model")
  log_path = os.path.join(run_dir, "job.log" if stop else "rerun.log")
  started = time.monotonic()
  sent = None
  with open(log_path, "w") as log:
    job = subprocess.Popen(command(launcher, model_dir, args), stdout=log,
                           stderr=subprocess.STDOUT, start_new_session=True)
    early = False
    if stop:
      sent, early = wait_and_send(job, log_path, started, stop, args)
    try:
      code = job.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
      os.killpg(job.pid, signal.SIGKILL)
      code = "hang"
      job.wait()
  ended = time.monotonic()
  with open(log_path, errors="replace") as log:
    output = log.read()
  return {"code": code, "sent": sent, "before_the_last_step": early,
          "seconds": round(ended - started, 1),
          "stopped_at": stopped_step(output), "latest": latest(model_dir),
          "resumed_from": resumed_step(output),
          "traceback": ours_traceback(output),
          "left": left_behind(model_dir),
          "finished": os.path.exists(os.path.join(model_dir, "results.json")),
          "digests": digests(model_dir)}


def wait_and_send(job, log_path, started, stop, args):
  """Sends the signal at its moment: (seconds after the start it went, or
  None when the job ended first; whether rank 0 had not yet logged the
  last step)."""
  name, moment = stop
  pattern = moment_line(moment, args.steps)
  at = None if pattern else float(moment.split("+")[1])
  output = ""
  with open(log_path, errors="replace") as log:
    while job.poll() is None:
      output += log.read()   # what was written since the last look
      if at is not None and time.monotonic() - started >= at:
        break
      if pattern and re.search(pattern, output):
        break
      time.sleep(0.02)
    else:
      return None, False
  number = getattr(signal, "SIG" + name)
  if args.to == "group":
    os.killpg(job.pid, number)
  else:
    job.send_signal(number)
  early = not re.search(moment_line("final", args.steps), output)
  return round(time.monotonic() - started, 2), early


def ours_traceback(output):
  """Whether a rank, or one of the project's launchers, printed a traceback
  (horovodrun's own, after a rank's non-zero exit, are not ours)."""
  if re.search(r"\]<std\w+>:Traceback", output):
    return True
  blocks = re.findall(r"^Traceback \(most recent call last\):\n((?:[ \t].*\n)*)",
                      output, re.M)
  return any("legacy_hvd" in block for block in blocks)


def stopped_step(output):
  found = re.search(r"Stopped by (?:signal \d+|another rank's signal) at step "
                    r"(\d+)", output)
  return int(found.group(1)) if found else None


def resumed_step(output):
  found = re.search(r"Resuming from global step (\d+)", output)
  return int(found.group(1)) if found else 0


def latest(model_dir):
  try:
    with open(os.path.join(model_dir, "checkpoint")) as f:
      found = re.search(r'model_checkpoint_path: ".*?-(\d+)"', f.read())
    return int(found.group(1)) if found else None
  except OSError:
    return None


def digests(model_dir):
  try:
    with open(os.path.join(model_dir, "results.json")) as f:
      return json.load(f)["weight_digests"]
  except (OSError, KeyError, ValueError):
    return None


def left_behind(model_dir):
  """Processes of the run still there LEFTOVER_SECONDS after it ended."""
  deadline = time.monotonic() + LEFTOVER_SECONDS
  while True:
    left = []
    for process in psutil.process_iter(["pid", "cmdline"]):
      if any(model_dir in part for part in process.info["cmdline"] or ()):
        left.append(process.info["pid"])
    if not left or time.monotonic() > deadline:
      return left
    time.sleep(0.5)


def judged(first, second, reference):
  """The row's verdict: failures, or none."""
  failures = []
  for name, record in (("run", first), ("rerun", second)):
    if record is None:
      continue
    if record["code"] == "hang":
      failures.append(f"{name} hung")
    if record["traceback"]:
      failures.append(f"{name}: a traceback")
    if record["left"]:
      failures.append(f"{name}: processes left {record['left']}")
  if first["finished"] and first["before_the_last_step"]:
    failures.append("lost: the job ran to its end"
                    + (" without its launcher" if first["code"] != 0 else ""))
  last = second or first
  if last["digests"] != reference["digests"]:
    failures.append("weights differ from the reference")
  if second and first["stopped_at"] is not None and (
      second["resumed_from"] != first["stopped_at"]):
    failures.append(f"stopped at {first['stopped_at']}, resumed from "
                    f"{second['resumed_from']}")
  return failures


def main(argv=None):
  args = parse_args(argv)
  os.makedirs(args.out, exist_ok=True)
  if not args.data_dir:
    args.data_dir = embedded.ensure_generated(os.path.join(args.out, "data"))
  rows = []
  for launcher in args.launchers:
    base = os.path.join(args.out, launcher)
    reference = run(launcher, os.path.join(base, "reference"), args)
    if not reference["finished"]:
      print(f"signal_moments: {launcher}: the reference run did not finish "
            f"(exit {reference['code']}); see {base}/reference/rerun.log",
            file=sys.stderr)
      sys.exit(1)
    for name in args.signals:
      for moment in args.moments:
        for repeat in range(args.repeats):
          run_dir = os.path.join(base, f"{name}-{moment}-{repeat}")
          first = run(launcher, run_dir, args, stop=(name, moment))
          second = None if first["finished"] else run(launcher, run_dir, args)
          row = {"launcher": launcher, "signal": "SIG" + name, "to": args.to,
                 "moment": moment, "repeat": repeat, "run": first,
                 "rerun": second, "failures": judged(first, second, reference)}
          rows.append(row)
          print(table_row(row), flush=True)
  with open(os.path.join(args.out, "report.json"), "w") as f:
    json.dump(rows, f, indent=1)
  with open(os.path.join(args.out, "report.md"), "w") as f:
    f.write(TABLE_HEAD + "".join(table_row(row) + "\n" for row in rows))
  kept = sum(not row["failures"] for row in rows)
  print(f"signal_moments: {kept} of {len(rows)} kept; {args.out}/report.md")
  sys.exit(0 if kept == len(rows) else 1)


TABLE_HEAD = ("| launcher | signal | to | moment | sent (s) | exit | stopped at "
              "| checkpoint | rerun from | rerun exit | kept |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")


def table_row(row):
  first, second = row["run"], row["rerun"]

  def shown(value, none="-"):
    return none if value is None else str(value)

  return "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
      row["launcher"], row["signal"], row["to"], row["moment"],
      shown(first["sent"], "after the end"),
      first["code"], shown(first["stopped_at"]), shown(first["latest"]),
      "finished" if second is None else second["resumed_from"],
      "-" if second is None else second["code"],
      "yes" if not row["failures"] else "no: " + "; ".join(row["failures"]))


if __name__ == "__main__":
  main()
