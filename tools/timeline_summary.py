"""Where a Horovod job's communication time goes, from its timeline.

    HOROVOD_TIMELINE=/tmp/tl.json horovodrun -np 2 python -m legacy_hvd.train ...
    python tools/timeline_summary.py /tmp/tl.json [--json]

Horovod's timeline (Chrome trace format, written by rank 0) has, per tensor,
a NEGOTIATE_ALLREDUCE phase (from the first rank asking for the allreduce to
the last: time ranks spend waiting for each other) and the ALLREDUCE itself
(with its GLOO_ALLREDUCE or MPI_ALLREDUCE part, and MEMCPY_IN/OUT_FUSION_BUFFER
when tensors were fused). Prints a markdown table: per tensor and phase, how
many times it ran, its total and its median and 90th-percentile duration in
milliseconds, heaviest first. A timeline cut short by a killed job is read up
to its last whole event.
"""
import argparse
import collections
import json
import statistics
import sys


def read_events(path):
  """The timeline's events; tolerates the unterminated file of a killed job."""
  with open(path) as f:
    text = f.read().strip()
  text = text.rstrip(",")
  if not text.endswith("]"):
    text = text[:text.rfind("}") + 1] + "]"
  return json.loads(text)


def phase_durations(events):
  """{(tensor, phase): [microseconds, ...]} from matched B/E event pairs."""
  names = {e["pid"]: e["args"]["name"] for e in events
           if e.get("name") == "process_name" and "name" in e.get("args", {})}
  open_phases = collections.defaultdict(list)
  durations = collections.defaultdict(list)
  for event in events:
    if event.get("ph") == "B":
      open_phases[event["pid"]].append((event["name"], event["ts"]))
    elif event.get("ph") == "E" and open_phases[event["pid"]]:
      phase, start = open_phases[event["pid"]].pop()
      tensor = names.get(event["pid"], str(event["pid"]))
      durations[(tensor, phase)].append(event["ts"] - start)
  return durations


def summarize(durations):
  """Rows sorted by total time: tensor, phase, count, total/median/p90 ms."""
  rows = []
  for (tensor, phase), values in durations.items():
    values = sorted(values)
    rows.append({"tensor": tensor, "phase": phase, "count": len(values),
                 "total_ms": sum(values) / 1e3,
                 "median_ms": statistics.median(values) / 1e3,
                 "p90_ms": values[int(0.9 * (len(values) - 1))] / 1e3})
  return sorted(rows, key=lambda row: -row["total_ms"])


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("timeline", help="the file HOROVOD_TIMELINE named")
  parser.add_argument("--json", action="store_true",
                      help="print the rows as JSON instead of a table")
  args = parser.parse_args(argv)
  try:
    rows = summarize(phase_durations(read_events(args.timeline)))
  except (OSError, ValueError) as e:
    sys.exit(f"timeline_summary: error: {args.timeline}: not a readable "
             f"Horovod timeline ({e}); expected the JSON file written under "
             "HOROVOD_TIMELINE or horovodrun --timeline-filename")
  if args.json:
    print(json.dumps(rows, indent=2))
    return
  print("| tensor | phase | count | total ms | median ms | p90 ms |")
  print("|---|---|---|---|---|---|")
  for row in rows:
    print(f"| {row['tensor']} | {row['phase']} | {row['count']} | "
          f"{row['total_ms']:.1f} | {row['median_ms']:.2f} | "
          f"{row['p90_ms']:.2f} |")


if __name__ == "__main__":
  main()
