"""The job across test hosts over emulated links: step time, compute and
communication, with Horovod's knobs; one invocation, cases interleaved.

    python tools/hostbench.py --out DIR [--links unlimited,100mbit,1gbit] \
        [--cases knobs|scaling|model|all|1x2,2x1-fp16,...] [--steps 150] \
        [--warmup 30] [--repeats 1] [--speeds full,half]

The cross-host counterpart of tools/benchmark.py (which runs on one host).
It brings up its own test hosts (tools/testhosts.py: network namespaces on
a bridge, each link shaped by tc to the rate of --links, both ways;
`unlimited`: no tc, the veth's own speed), and for every repeat, speed, link
and case launches the real trainer from lh1 as a user would: `horovodrun --gloo -np H*R -H lh1:R,...,lhH:R --network-interface eth0
--timeline-filename ... python -m legacy_hvd.train --synthetic ...` (one
fixed batch in memory: the input pipeline's CPU would blur the picture on
2 cores). Each host gets a core of its own, round robin (Host.pin: lh1 core
0, lh2 core 1, lh3 core 0 again on 2 cores), so up to `cores` hosts compute
as a cluster's 1-core hosts would, and beyond that hosts share a core the
way the scaling model's check assumes (`cpu_count` and `cores_by_host` in
the JSON). Cases on one host (`1xR`) talk over loopback and run once, for
the first link: they are the loopback side of each knob.

Speeds (--speeds): `full` runs the hosts as they are; `half` also runs a
busy loop on every host's core (a second runnable process at the same
priority), so each rank computes at about half speed, as on a slower
machine: every case runs at every speed, and the scaling model takes its
inputs at each speed from the runs at that speed.

Per run, from rank 0's step log and Horovod's timeline, over the steps
after the warm-up:
  step_ms     wall time per global step (one batch on every rank),
  comm_ms     time per step during which any allreduce was running on the
              wire (the union of the ALLREDUCE phases of the timeline, so
              fused or overlapping tensors count once),
  compute_ms  step_ms - comm_ms: the forward and backward pass, the update,
              and waiting that is not an allreduce (mostly compute here),
  negotiate_ms  time per step in NEGOTIATE_ALLREDUCE phases while no
              allreduce runs (a tensor ready on some rank, not yet on all,
              as rank 0's background loop sees it from one cycle to the
              next: waiting for the last rank),
  rounds      allreduces per step as the wire sees them (fused tensors and
              overlapping ones count once).
Each figure is the median over repeats; `spread` is (max - min) / median of
step_ms over the repeats. Every run's timeline is kept in
DIR/timelines/CASE-LINK-SPEED-REPEAT.json (tools/timeline_summary.py reads
it). Knob ratios (knob / default step time, the same link and speed) come
out per link and for loopback, side by side.
Writes DIR/hostbench.json and DIR/hostbench.md. Needs root.
"""
import argparse
import contextlib
import json
import os
import shutil
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
UNLIMITED = "unlimited"      # a link without tc: the veth's own speed
# --speeds: how many busy loops share each host's core with the job.
SPEEDS = {"full": 0, "half": 1}
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
    # The scaling model's inputs and its check with a core per rank (run
    # with --links unlimited,...: the inputs are the unlimited link's).
    "model": ["1x1", "1x2", "2x1", "2x1-fp16", "2x1-accumulate2"],
}
GROUPS["all"] = list(dict.fromkeys(GROUPS["knobs"] + GROUPS["scaling"]))
ALLREDUCE = "ALLREDUCE"
NEGOTIATE = "NEGOTIATE_ALLREDUCE"


def parse_args(argv):
  parser = argparse.ArgumentParser(prog="hostbench",
                                   description=__doc__.splitlines()[0])
  parser.add_argument("--out", required=True)
  parser.add_argument("--links", default="100mbit,1gbit",
                      help="comma-separated tc rates, each host's link both "
                      "ways (e.g. 100mbit, 1gbit), or unlimited (no tc)")
  parser.add_argument("--cases", default="knobs",
                      help="groups ({}) or cases: {}".format(
                          ", ".join(GROUPS), ", ".join(CASES)))
  parser.add_argument("--steps", type=int, default=150,
                      help="measured global steps per run")
  parser.add_argument("--warmup", type=int, default=30)
  parser.add_argument("--repeats", type=int, default=1)
  parser.add_argument("--speeds", default="full",
                      help="comma-separated compute speeds: full, half (a "
                      "busy loop shares each host's core)")
  parser.add_argument("--repo", default=REPO,
                      help="the checkout whose trainer runs (e.g. a `git "
                      "archive` of a commit, while this tree changes)")
  args = parser.parse_args(argv)
  names = args.cases.split(",")
  args.cases = list(dict.fromkeys(
      c for name in names for c in GROUPS.get(name, [name])))
  unknown = sorted(set(args.cases) - set(CASES))
  args.links = [l for l in args.links.split(",") if l]
  for link in args.links:
    try:
      if link != UNLIMITED:
        testhosts.rate_mbit(link)
    except ValueError:
      parser.error("--links: expected a rate like 100mbit or 1gbit, or {}; "
                   "got {}".format(UNLIMITED, link))
  args.speeds = [s for s in args.speeds.split(",") if s]
  if not args.speeds or set(args.speeds) - set(SPEEDS):
    parser.error("--speeds: expected a comma-separated list of {}, got "
                 "{}".format(", ".join(SPEEDS), ",".join(args.speeds)))
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


def phase_intervals(events, phase):
  """{tensor: [(start_us, end_us), ...]} of the timeline's `phase` phases
  (ALLREDUCE, NEGOTIATE_ALLREDUCE)."""
  names = {e["pid"]: e["args"]["name"] for e in events
           if e.get("name") == "process_name" and "name" in e.get("args", {})}
  open_phases, found = {}, {}
  for event in events:
    if event.get("ph") == "B":
      open_phases.setdefault(event["pid"], []).append(
          (event["name"], event["ts"]))
    elif event.get("ph") == "E" and open_phases.get(event["pid"]):
      name, start = open_phases[event["pid"]].pop()
      if name == phase:
        found.setdefault(names.get(event["pid"], event["pid"]), []).append(
            (start, event["ts"]))
  return found


def per_step(events, warmup, total, steps):
  """{"comm_ms", "negotiate_ms", "rounds"} per step after the warm-up, from
  the union of the per-step tensors' ALLREDUCE phases (and the time their
  NEGOTIATE_ALLREDUCE phases add to it): each tensor's first `warmup` share
  of allreduces is left out, and negotiations that began before the last
  of those ended. Tensors reduced less than once per 4 steps (start-up,
  evaluation) are left out."""
  reduced = phase_intervals(events, ALLREDUCE)
  spans, start = [], 0
  for tensor, values in reduced.items():
    if len(values) * 4 < total:
      continue
    values = sorted(values)
    skip = len(values) * warmup // total
    spans += values[skip:]
    if skip:
      start = max(start, values[skip - 1][1])
  negotiated = [span for tensor, values in
                phase_intervals(events, NEGOTIATE).items()
                for span in values if tensor in reduced
                and len(reduced[tensor]) * 4 >= total and span[0] >= start]
  comm, rounds = _union(spans)
  # Negotiation while an earlier round is on the wire costs nothing extra.
  either, _ = _union(spans + negotiated)
  return {"comm_ms": comm / 1e3 / steps,
          "negotiate_ms": (either - comm) / 1e3 / steps,
          "rounds": rounds / steps}


def _union(spans):
  """(microseconds covered by the spans, how many disjoint pieces)."""
  covered, pieces, end = 0.0, 0, None
  for start, stop in sorted(spans):
    if end is None or start > end:
      covered += stop - start
      pieces += 1
      end = stop
    elif stop > end:
      covered += stop - end
      end = stop
  return covered, pieces


def run_case(cluster, name, args, work, keep_timeline=None):
  """One run of case `name`: {"step_ms", "comm_ms", "compute_ms",
  "negotiate_ms", "rounds", "images_per_sec"}, or None past the time-out.
  keep_timeline: a path to copy the run's timeline to."""
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
  if keep_timeline:
    shutil.copyfile(timeline, keep_timeline)
  phases = per_step(timeline_summary.read_events(timeline), args.warmup,
                    total, args.steps)
  return dict(phases, step_ms=step_ms,
              compute_ms=step_ms - phases["comm_ms"],
              images_per_sec=BATCH_SIZE * hosts * ranks * 1e3 / step_ms)


def plans(args):
  """(case, link) in run order: loopback-only cases once, for the first link."""
  for i, link in enumerate(args.links):
    for name in args.cases:
      if CASES[name][0] > 1 or i == 0:
        yield name, link if CASES[name][0] > 1 else "loopback"


@contextlib.contextmanager
def busy_cores(cluster, loops):
  """`loops` busy loops inside every host, on its core, while the block
  runs: each rank then gets about 1 / (loops + 1) of its core."""
  spinning = []
  try:
    for host in cluster.hosts:
      for _ in range(loops):
        spinning.append(host.popen([sys.executable, "-c", "while True: pass"],
                                   stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL))
    yield
  finally:
    for process in spinning:
      process.kill()
      process.wait()


def knob_ratios(medians):
  """{(knob, link, speed): knob case's step time / its default case's}."""
  ratios = {}
  for (name, link, speed), row in medians.items():
    if "-" in name:
      base = (name.split("-")[0], link, speed)
      if base in medians:
        ratios[(name.split("-", 1)[1] + " at " + base[0], link, speed)] = (
            row["step_ms"] / medians[base]["step_ms"])
  return ratios


def write_report(args, runs, out):
  medians = {}
  for key, values in runs.items():
    if not values:
      continue
    medians[key] = {field: statistics.median(v[field] for v in values)
                    for field in values[0]}
    steps = [v["step_ms"] for v in values]
    medians[key]["spread"] = (max(steps) - min(steps)) / medians[key][
        "step_ms"]
    medians[key]["step_ms_repeats"] = steps
  ratios = knob_ratios(medians)
  report = {"steps": args.steps, "warmup": args.warmup,
            "repeats": args.repeats, "batch_size_per_rank": BATCH_SIZE,
            "cpu_count": os.cpu_count(),
            "cores_by_host": {"lh{}".format(i + 1): i % os.cpu_count()
                              for i in range(max(4, os.cpu_count()))},
            "speeds": {speed: SPEEDS[speed] for speed in args.speeds},
            "runs": [dict(case=n, link=l, speed=sp, hosts=CASES[n][0],
                          ranks_per_host=CASES[n][1], repeats=len(v),
                          **medians[(n, l, sp)])
                     for (n, l, sp), v in runs.items() if v],
            "knob_ratios": [{"knob": k, "link": l, "speed": sp,
                             "step_time_ratio": r}
                            for (k, l, sp), r in ratios.items()]}
  with open(os.path.join(out, "hostbench.json"), "w") as f:
    json.dump(report, f, indent=2)
  lines = ["| case | link | speed | step ms (spread) | comm ms | negotiate "
           "ms | rounds | compute ms | images/sec |",
           "|---|---|---|---|---|---|---|---|---|"]
  lines += ["| {} | {} | {} | {:.1f} ({:.0%}) | {:.1f} | {:.1f} | {:.1f} | "
            "{:.1f} | {:.0f} |".format(
                n, l, sp, m["step_ms"], m["spread"], m["comm_ms"],
                m["negotiate_ms"], m["rounds"], m["compute_ms"],
                m["images_per_sec"])
            for (n, l, sp), m in medians.items()]
  knobs = sorted({k.split(" at ")[0] for k, _, _ in ratios})
  links = ["loopback"] + args.links
  for speed in args.speeds:
    lines += ["", "| knob: step time / default ({} speed) | ".format(speed)
              + " | ".join(links) + " |", "|---|" + "---|" * len(links)]
    for knob in knobs:
      cells = [" / ".join("{:.2f} ({})".format(r, k.split(" at ")[1])
                          for (k, l, sp), r in sorted(ratios.items())
                          if l == link and sp == speed
                          and k.startswith(knob + " at "))
               or "-" for link in links]
      lines.append("| {} | {} |".format(knob, " | ".join(cells)))
  with open(os.path.join(out, "hostbench.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  print("\n".join(lines))


def main(argv=None):
  args = parse_args(argv)
  timelines = os.path.join(args.out, "timelines")
  os.makedirs(timelines, exist_ok=True)
  order = list(plans(args))
  hosts = max(CASES[name][0] for name, _ in order)
  runs = {(name, link, speed): [] for speed in args.speeds
          for name, link in order}
  try:
    with testhosts.Cluster(hosts=max(hosts, 2)) as cluster, \
        tempfile.TemporaryDirectory(prefix="hostbench-") as work:
      for i, host in enumerate(cluster.hosts):
        host.pin([i % os.cpu_count()])
      for repeat in range(args.repeats):
        for speed in args.speeds:
          with busy_cores(cluster, SPEEDS[speed]):
            for link in args.links:
              for host in cluster.hosts:
                host.set_rate(None if link == UNLIMITED else link)
              for name, case_link in order:
                if case_link not in (link, "loopback") or (
                    case_link == "loopback" and link != args.links[0]):
                  continue
                result = run_case(cluster, name, args, work, os.path.join(
                    timelines, "{}-{}-{}-{}.json".format(
                        name, case_link, speed, repeat + 1)))
                if result is None:
                  continue
                runs[(name, case_link, speed)].append(result)
                print("hostbench: repeat {} {} over {} at {} speed: step "
                      "{:.1f} ms (comm {:.1f}, negotiate {:.1f}, compute "
                      "{:.1f})".format(repeat + 1, name, case_link, speed,
                                       result["step_ms"], result["comm_ms"],
                                       result["negotiate_ms"],
                                       result["compute_ms"]), flush=True)
  except testhosts.HarnessError as e:
    sys.exit("hostbench: error: {}".format(e))
  write_report(args, runs, args.out)
  return 0


if __name__ == "__main__":
  sys.exit(main())
