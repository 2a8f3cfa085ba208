"""The job across test hosts over emulated links: step time, compute and
communication, with Horovod's knobs; one invocation, cases interleaved.

    python tools/hostbench.py --out DIR [--links 100mbit,1gbit] \
        [--cases knobs|scaling|all|1x2,2x1-fp16,...] [--steps 150] [--warmup 30]

The cross-host counterpart of tools/benchmark.py (which runs on one host).
It brings up its own test hosts (tools/testhosts.py: network namespaces on
a bridge, each link shaped by tc to the rate of --links, both ways), and for
every link, repeat and case launches the real trainer from lh1 as a user
would: `horovodrun --gloo -np H*R -H lh1:R,...,lhH:R --network-interface eth0
--timeline-filename ... python -m legacy_hvd.train --synthetic ...` (one
fixed batch in memory: the input pipeline's CPU would blur the picture on
2 cores). Each host gets a core of its own, round robin (Host.pin: lh1 core
0, lh2 core 1, lh3 core 0 again on 2 cores), so up to `cores` hosts compute
as a cluster's 1-core hosts would, and beyond that hosts share a core the
way the scaling model's check assumes (`cpu_count` and `cores_by_host` in
the JSON). Cases on one host (`1xR`) talk over loopback and run once, for
the first link: they are the loopback side of each knob.

Per run, from rank 0's step log and Horovod's timeline, over the steps
after the warm-up:
  step_ms     wall time per global step (one batch on every rank),
  comm_ms     time per step during which any allreduce was running on the
              wire (the union of the ALLREDUCE phases of the timeline, so
              fused or overlapping tensors count once),
  compute_ms  step_ms - comm_ms: the forward and backward pass, the update,
              and waiting that is not an allreduce (mostly compute here).
Each figure is the median over repeats. Knob ratios (knob / default step
time, the same link) come out per link and for loopback, side by side.
Writes DIR/hostbench.json and DIR/hostbench.md. Needs root.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tools import testhosts  # noqa: E402
from tools import timeline_summary  # noqa: E402

TIMEOUT_SECONDS = 240        # per run; a run past it is left out, not fatal
BATCH_SIZE = 64              # per rank, the trainer's default
GLOO = ["--gloo"]
# name -> (hosts, ranks per host, trainer flags, horovodrun flags)
CASES = {
    "1x1": (1, 1, [], []),
    "1x2": (1, 2, [], []),
    "1x4": (1, 4, [], []),
    "1x2-fp16": (1, 2, ["--fp16_allreduce"], []),
    "1x2-nofusion": (1, 2, [], ["--fusion-threshold-mb", "0"]),
    "1x2-cycle10": (1, 2, [], ["--cycle-time-ms", "10"]),
    "1x2-accumulate2": (1, 2, ["--backward_passes_per_step=2"], []),
    "2x1": (2, 1, [], []),
    "3x1": (3, 1, [], []),
    "4x1": (4, 1, [], []),
    "2x2": (2, 2, [], []),
    "2x1-fp16": (2, 1, ["--fp16_allreduce"], []),
    "2x1-nofusion": (2, 1, [], ["--fusion-threshold-mb", "0"]),
    "2x1-cycle10": (2, 1, [], ["--cycle-time-ms", "10"]),
    "2x1-accumulate2": (2, 1, ["--backward_passes_per_step=2"], []),
    "2x2-hierarchical": (2, 2, [], ["--hierarchical-allreduce"]),
    "4x1-fp16": (4, 1, ["--fp16_allreduce"], []),
}
GROUPS = {
    "knobs": ["1x2", "1x2-fp16", "1x2-nofusion", "1x2-cycle10",
              "1x2-accumulate2", "2x1", "2x1-fp16", "2x1-nofusion",
              "2x1-cycle10", "2x1-accumulate2", "2x2", "2x2-hierarchical"],
    "scaling": ["1x1", "1x2", "2x1", "3x1", "4x1", "2x2", "4x1-fp16"],
}
GROUPS["all"] = list(dict.fromkeys(GROUPS["knobs"] + GROUPS["scaling"]))
ALLREDUCE = "ALLREDUCE"


def parse_args(argv):
  parser = argparse.ArgumentParser(prog="hostbench",
                                   description=__doc__.splitlines()[0])
  parser.add_argument("--out", required=True)
  parser.add_argument("--links", default="100mbit,1gbit",
                      help="comma-separated tc rates, each host's link both "
                      "ways (e.g. 100mbit, 1gbit)")
  parser.add_argument("--cases", default="knobs",
                      help="groups ({}) or cases: {}".format(
                          ", ".join(GROUPS), ", ".join(CASES)))
  parser.add_argument("--steps", type=int, default=150,
                      help="measured global steps per run")
  parser.add_argument("--warmup", type=int, default=30)
  parser.add_argument("--repeats", type=int, default=1)
  parser.add_argument("--repo", default=REPO,
                      help="the checkout whose trainer runs (e.g. a `git "
                      "archive` of a commit, while this tree changes)")
  args = parser.parse_args(argv)
  names = args.cases.split(",")
  args.cases = list(dict.fromkeys(
      c for name in names for c in GROUPS.get(name, [name])))
  unknown = sorted(set(args.cases) - set(CASES))
  args.links = [l for l in args.links.split(",") if l]
  try:
    for link in args.links:
      testhosts.rate_mbit(link)
  except ValueError as e:
    parser.error("--links: {}".format(e))
  if unknown or not args.links or min(args.steps, args.warmup,
                                      args.repeats) < 1:
    parser.error("expected --cases from {} and positive --steps, --warmup, "
                 "--repeats, one --links rate or more; got {}".format(
                     ", ".join(list(GROUPS) + list(CASES)),
                     ", ".join(unknown) or "a value below 1"))
  return args


def job_argv(name, model_dir, timeline, total):
  """horovodrun's command line for case `name`, run inside lh1."""
  hosts, ranks, flags, launcher = CASES[name]
  spec = ",".join("lh{}:{}".format(i, ranks) for i in range(1, hosts + 1))
  argv = ["horovodrun", *GLOO, "-np", str(hosts * ranks), "-H", spec,
          "--timeline-filename", timeline, *launcher]
  if hosts > 1:   # one host: horovodrun wants loopback, name none
    argv += ["--network-interface", testhosts.INTERFACE]
  return argv + [sys.executable, "-m", "legacy_hvd.train", "--synthetic",
                 "--model_dir=" + model_dir, "--max_steps={}".format(total),
                 "--step_log=" + os.path.join(model_dir, "steps.jsonl"),
                 "--log_every_n_steps={}".format(total),
                 "--save_checkpoints_steps={}".format(total), *flags]


def allreduce_intervals(events):
  """{tensor: [(start_us, end_us), ...]} of the timeline's ALLREDUCE phases."""
  names = {e["pid"]: e["args"]["name"] for e in events
           if e.get("name") == "process_name" and "name" in e.get("args", {})}
  open_phases, found = {}, {}
  for event in events:
    if event.get("ph") == "B":
      open_phases.setdefault(event["pid"], []).append(
          (event["name"], event["ts"]))
    elif event.get("ph") == "E" and open_phases.get(event["pid"]):
      phase, start = open_phases[event["pid"]].pop()
      if phase == ALLREDUCE:
        found.setdefault(names.get(event["pid"], event["pid"]), []).append(
            (start, event["ts"]))
  return found


def comm_per_step(intervals, warmup, total, steps):
  """Milliseconds per step in which some allreduce ran: the union of the
  per-step allreduces' intervals after each tensor's first `warmup` share,
  divided by `steps`. Tensors reduced less than once per 4 steps (start-up,
  evaluation) are left out."""
  spans = []
  for values in intervals.values():
    if len(values) * 4 < total:
      continue
    skip = len(values) * warmup // total
    spans += sorted(values)[skip:]
  covered, end = 0.0, None
  for start, stop in sorted(spans):
    if end is None or start > end:
      covered += stop - start
      end = stop
    elif stop > end:
      covered += stop - end
      end = stop
  return covered / 1e3 / steps


def run_case(cluster, name, args, work):
  hosts, ranks, _, _ = CASES[name]
  model_dir = tempfile.mkdtemp(prefix=name + "-", dir=work)
  timeline = os.path.join(model_dir, "timeline.json")
  total = args.warmup + args.steps
  try:
    process = cluster.hosts[0].run(job_argv(name, model_dir, timeline,
                                            total), cwd=args.repo,
                                   timeout=TIMEOUT_SECONDS)
  except subprocess.TimeoutExpired:
    # Seen with two ranks on one core: a rank spinning in system calls
    # starves its neighbour for minutes. The run is left out, loudly.
    for host in cluster.hosts:
      host.kill(model_dir)
    print("hostbench: case {} took over {} s; left out".format(
        name, TIMEOUT_SECONDS), file=sys.stderr, flush=True)
    return None
  if process.returncode:
    sys.exit("hostbench: error: case {} exited {}:\n{}".format(
        name, process.returncode, process.stderr[-2000:]))
  with open(os.path.join(model_dir, "steps.jsonl")) as f:
    times = {r["step"]: r["time"] for r in map(json.loads, f)}
  step_ms = (times[total] - times[args.warmup]) * 1e3 / args.steps
  comm_ms = comm_per_step(allreduce_intervals(
      timeline_summary.read_events(timeline)), args.warmup, total, args.steps)
  return {"step_ms": step_ms, "comm_ms": comm_ms,
          "compute_ms": step_ms - comm_ms,
          "images_per_sec": BATCH_SIZE * hosts * ranks * 1e3 / step_ms}


def plans(args):
  """(case, link) in run order: loopback-only cases once, for the first link."""
  for i, link in enumerate(args.links):
    for name in args.cases:
      if CASES[name][0] > 1 or i == 0:
        yield name, link if CASES[name][0] > 1 else "loopback"


def knob_ratios(medians):
  """{(knob, link): knob case's step time / its default case's}."""
  ratios = {}
  for (name, link), row in medians.items():
    if "-" in name:
      base = (name.split("-")[0], link)
      if base in medians:
        ratios[(name.split("-", 1)[1] + " at " + base[0], link)] = (
            row["step_ms"] / medians[base]["step_ms"])
  return ratios


def write_report(args, runs, out):
  medians = {}
  for key, values in runs.items():
    if not values:
      continue
    medians[key] = {field: statistics.median(v[field] for v in values)
                    for field in values[0]}
  ratios = knob_ratios(medians)
  report = {"steps": args.steps, "warmup": args.warmup,
            "repeats": args.repeats, "batch_size_per_rank": BATCH_SIZE,
            "cpu_count": os.cpu_count(),
            "cores_by_host": {"lh{}".format(i + 1): i % os.cpu_count()
                              for i in range(max(4, os.cpu_count()))},
            "runs": [dict(case=n, link=l, hosts=CASES[n][0],
                          ranks_per_host=CASES[n][1], repeats=v,
                          **medians[(n, l)]) for (n, l), v in runs.items()
                     if v],
            "knob_ratios": [{"knob": k, "link": l, "step_time_ratio": r}
                            for (k, l), r in ratios.items()]}
  with open(os.path.join(out, "hostbench.json"), "w") as f:
    json.dump(report, f, indent=2)
  lines = ["| case | link | step ms | comm ms | compute ms | images/sec |",
           "|---|---|---|---|---|---|"]
  lines += ["| {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.0f} |".format(
      n, l, m["step_ms"], m["comm_ms"], m["compute_ms"], m["images_per_sec"])
      for (n, l), m in medians.items()]
  knobs = sorted({k.split(" at ")[0] for k, _ in ratios})
  links = ["loopback"] + args.links
  lines += ["", "| knob: step time / default | " + " | ".join(links) + " |",
            "|---|" + "---|" * len(links)]
  for knob in knobs:
    cells = [" / ".join("{:.2f} ({})".format(r, k.split(" at ")[1])
                        for (k, l), r in sorted(ratios.items())
                        if l == link and k.startswith(knob + " at "))
             or "-" for link in links]
    lines.append("| {} | {} |".format(knob, " | ".join(cells)))
  with open(os.path.join(out, "hostbench.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  print("\n".join(lines))


def main(argv=None):
  args = parse_args(argv)
  os.makedirs(args.out, exist_ok=True)
  order = list(plans(args))
  hosts = max(CASES[name][0] for name, _ in order)
  runs = {key: [] for key in order}
  try:
    with testhosts.Cluster(hosts=max(hosts, 2)) as cluster, \
        tempfile.TemporaryDirectory(prefix="hostbench-") as work:
      for i, host in enumerate(cluster.hosts):
        host.pin([i % os.cpu_count()])
      for repeat in range(args.repeats):
        for link in args.links:
          for host in cluster.hosts:
            host.set_rate(link)
          for name, case_link in order:
            if case_link not in (link, "loopback") or (
                case_link == "loopback" and link != args.links[0]):
              continue
            result = run_case(cluster, name, args, work)
            if result is None:
              continue
            runs[(name, case_link)].append(result)
            print("hostbench: repeat {} {} over {}: step {:.1f} ms (comm "
                  "{:.1f}, compute {:.1f})".format(
                      repeat + 1, name, case_link, result["step_ms"],
                      result["comm_ms"], result["compute_ms"]), flush=True)
  except testhosts.HarnessError as e:
    sys.exit("hostbench: error: {}".format(e))
  write_report(args, runs, args.out)
  return 0


if __name__ == "__main__":
  sys.exit(main())
