"""What a finished job's own records say: where each rank ran, which library
reduced its gradients, whether the ranks ended equal, how fast it went.

    lines = rank_lines(output)    # {rank: [its lines]}, from horovodrun's
    placement(lines, np, "gpu")   # -> Verdict(name, ok, detail)
    collective(lines, np, "gpu", timeline_activities(path))
    weights(results, np)

Each pattern below is the format of the program that writes the line, read
from its source; nothing here imports TensorFlow or Horovod."""
import collections
import json
import re

Verdict = collections.namedtuple("Verdict", "name ok detail")

# horovodrun's mark on each line a rank writes, `[{rank}]<{stream}>:`, after a
# time with --prefix-output-with-timestamp (Horovod 0.28.1,
# horovod/runner/common/util/safe_shell_exec.py, prefix_connection).
RANK_PREFIX = re.compile(r"^[^\[]*\[(\d+)\]<(?:stdout|stderr)>:(.*)$")
# TensorFlow's line as a process makes its GPU device; `device: K` is the
# CUDA ordinal, whatever visible_device_list renumbered (TF 2.15,
# tensorflow/core/common_runtime/gpu/gpu_device.cc, CreateGPUDevice and
# GetShortDeviceDescription).
TF_GPU_DEVICE = re.compile(
    r"Created device (\S+) with (\d+) MB memory:\s+-> device: (\d+), "
    r"name: (.*?), pci bus id: ([^,\s]+)")
# NCCL's, once a communicator is up, with NCCL_DEBUG=INFO (NCCL 2.16.5,
# src/init.cc `comm %p rank %d nranks %d cudaDev %d busId %lx commId 0x%llx
# - Init COMPLETE`, after src/debug.cc's `host:pid:tid [dev] NCCL INFO `).
NCCL_INIT = re.compile(
    r"NCCL INFO comm 0x[0-9a-fA-F]+ rank (\d+) nranks (\d+) cudaDev (\d+) "
    r"busId ([0-9a-fA-F]+)\b.* - Init COMPLETE")
# The job's own start line (legacy_hvd/rank/placement.py, describe).
START_LINE = re.compile(
    r"Rank (\d+) \(local (\d+) of (\d+)\):.*; visible_device_list '(\d*)'")
# Horovod's timeline activity for an allreduce on each device (Horovod
# 0.28.1, horovod/common/common.h; begun in ops/nccl_operations.cc and
# ops/gloo_operations.cc by ActivityStartAll).
ALLREDUCE = {"gpu": "NCCL_ALLREDUCE", "cpu": "GLOO_ALLREDUCE"}


def rank_lines(output):
  """{rank: [line without horovodrun's mark]} of a job's merged output."""
  found = collections.defaultdict(list)
  for line in output.splitlines():
    match = RANK_PREFIX.match(line)
    if match:
      found[int(match.group(1))].append(match.group(2))
  return dict(found)


def gpus_used(lines):
  """{CUDA ordinal: (name, pci bus id)} TensorFlow's lines say a rank made."""
  return {int(m.group(3)): (m.group(4), m.group(5))
          for m in map(TF_GPU_DEVICE.search, lines) if m}


def nccl_devices(lines):
  """[(nccl rank, nranks, cudaDev)] of a rank's NCCL communicators."""
  return [tuple(map(int, m.group(1, 2, 3)))
          for m in map(NCCL_INIT.search, lines) if m]


def placement(lines, np, device):
  """Rank k used GPU k, as TensorFlow's and NCCL's lines say; on CPU, rank k
  was told visible_device_list 'k', as its start line says."""
  found, problems = [], []
  for rank in range(np):
    own = lines.get(rank, [])
    if device == "cpu":
      told = [m.group(4) for m in map(START_LINE.search, own)
              if m and int(m.group(1)) == rank]
      found.append(f"rank {rank} visible_device_list {told[0]!r}"
                   if told else None)
      if told != [str(rank)]:
        problems.append(f"rank {rank}: start line says visible_device_list "
                        f"{told or 'nothing'}, expected '{rank}'")
      continue
    gpus = gpus_used(own)
    ordinals = set(gpus) | {dev for _, _, dev in nccl_devices(own)}
    if not ordinals:
      problems.append(f"rank {rank}: no TensorFlow `Created device` or NCCL "
                      "`Init COMPLETE` line")
    elif ordinals != {rank}:
      problems.append(f"rank {rank}: used GPU {sorted(ordinals)}, expected "
                      f"GPU {rank}")
    name, bus = gpus.get(rank, ("?", "?"))
    found.append(f"rank {rank} on GPU {rank} ({name}, {bus})")
  if problems:
    return Verdict("placement", False, "; ".join(problems))
  return Verdict("placement", True, ", ".join(found))


def timeline_activities(path):
  """Counter of the activities begun in Horovod's timeline at `path`
  (Chrome trace events, `"ph": "B"`); None if it is missing or unreadable."""
  try:
    with open(path) as f:
      events = json.load(f)
  except (OSError, ValueError):
    return None
  return collections.Counter(e.get("name") for e in events
                             if isinstance(e, dict) and e.get("ph") == "B")


def collective(lines, np, device, activities):
  """The gradients were allreduced by the device's library: NCCL (GPU) or
  Gloo (CPU) in Horovod's timeline, and on GPU an NCCL communicator on every
  rank."""
  expected = ALLREDUCE[device]
  if activities is None:
    return Verdict("allreduce", False, "no readable Horovod timeline")
  if not activities[expected]:
    seen = sorted(n for n in activities if n and n.endswith("_ALLREDUCE")
                  and not n.startswith("NEGOTIATE"))
    return Verdict("allreduce", False, f"no {expected} in Horovod's timeline "
                   f"(its allreduces: {', '.join(seen) or 'none'})")
  detail = f"{expected} x {activities[expected]} in Horovod's timeline"
  if device == "gpu":
    missing = [r for r in range(np) if not nccl_devices(lines.get(r, []))]
    if missing:
      return Verdict("allreduce", False, f"{detail}, but no NCCL "
                     f"`Init COMPLETE` line from ranks {missing}")
    detail += f"; NCCL communicators up on all {np} ranks"
  return Verdict("allreduce", True, detail)


def weights(results, np):
  """Every rank ended with the same weights: results.json's weight_digests
  (one per rank, legacy_hvd/common/results.py) all equal."""
  if results is None:
    return Verdict("weights", False, "no results.json: the job did not end")
  digests = results.get("weight_digests") or []
  if len(digests) != np or not results.get("weights_in_sync"):
    return Verdict("weights", False, f"weight_digests {digests}: expected "
                   f"{np} equal digests")
  digest = digests[0] if isinstance(digests[0], list) else [digests[0]]
  return Verdict("weights", True, f"all {np} ranks' weight digests equal "
                 f"after step {results.get('steps')} "
                 f"([{', '.join(f'{x:.6g}' for x in digest[:3])}, ...])")


def step_log_rate(path, batch_size):
  """images/sec of a step log (one JSON line per step: step, time), after
  its first step, as the trainers count them; None if too short."""
  with open(path) as f:
    records = [json.loads(line) for line in f if line.strip()]
  if len(records) < 2:
    return None
  first, last = records[0], records[-1]
  return ((last["step"] - first["step"]) * batch_size
          / (last["time"] - first["time"]))
