"""Predicts step time and scaling efficiency on N hosts x R ranks from
measured inputs, and checks itself against the emulated hosts.

    python tools/scaling_model.py --measured DIR/hostbench.json [...] \
        --out DIR [--rtt_ms 0.025] [--max_hosts 256] [--plot docs/scaling.png]

    inputs = Inputs(compute_ms=9.0, overhead_ms=1.8, rounds=fused_rounds(),
                    unfused_rounds=unfused_rounds(), negotiation_ms=1.9)
    step_ms(inputs, hosts=64, ranks_per_host=1, setting=Setting(1000, 0.0125))

The model (ring allreduce, as Horovod's Gloo runs it: a reduce-scatter and
an allgather around all P = N x R ranks, hosts contiguous in the ring):

  step = compute(cpu_share) + per batch, over the allreduce rounds
         (the gradients' rounds once per `accumulate` batches), of
           overhead + 2 (P - 1) / P x bytes / bandwidth + 2 (P - 1) x latency
         + negotiation + 2 (P - 1) x latency
         + (cycle_ms - 1) / 2 + fp16_ms once per allreduce step

- compute: the forward and backward pass of one rank on its own core
  (measured: the 1x1 run's step time; at size 1 Horovod skips the
  allreduce, so nothing of Horovod is in it). cpu_share: how many ranks
  share that core: 1 on a real cluster with a core per rank; on the
  emulated hosts, which get one of the machine's cores each, round robin,
  R x ceil(N / cores), and their compute is that of a loopback run with as
  many ranks on one core (1x2, 1x4: time slicing costs more than the
  share), less the model's Horovod costs on one host.
- rounds: the allreduces as the timeline shows them with fusion: the stop
  flag's (ready at the step's start, every batch), then the gradients ready
  when Horovod's loop next wakes (the dense layer's and the biases), then
  the convolution's weights (the backward pass's last). Without fusion each
  gradient is its own round. fp16 halves the gradients' bytes.
- overhead: the allreduce's own cost per round without a wire (fusion
  buffer copies, Gloo's messages, the background thread waiting for the
  rank's core): the ALLREDUCE phases per step of 2x1 over the unlimited
  link / rounds.
- negotiation: what a round costs outside its allreduce: Horovod's loop
  agreeing that every rank has the tensor (the next cycle, a cache-bit
  allreduce of a few bytes over the network, waiting for the last rank:
  the timeline's NEGOTIATE_ALLREDUCE) and the hand-back to TensorFlow.
  Measured: 2x1 over the unlimited link, (step - compute - its ALLREDUCE
  phases) / rounds. The cache-bit allreduce is a Gloo ring over all ranks,
  so it adds 2 (P - 1) latencies per round like the gradients' ring.
- cycle_ms: Horovod's background loop wakes every cycle; the step's first
  gradients wait half a cycle on average (the default 1 ms is in the
  measured negotiation); the later ones arrive while the loop is busy.
- fp16_ms: float16's own cost per allreduce step (the casts, TF ops
  outside the allreduce; Gloo summing float16 in software), with no bytes
  to save: 2x1-fp16 - 2x1 over the unlimited link (step time).
- bandwidth: each host's link, the same both ways, as TCP payload (tc's rate
  x 1448/1514, checked by tools/linkcheck.py); in the ring each host sends
  2 (P-1)/P of the bytes over its one link whatever R is (the other edges
  of the ring are inside hosts). The unlimited link counts as infinite.
- latency: one way per ring step (half the measured RTT); 2 (P-1) steps.
- hierarchical: a reduce inside each host, a ring over N hosts, a broadcast
  inside: 2 (N-1) steps instead of 2 (P-1) for the gradients (the
  negotiation's ring stays over all ranks). Horovod 0.28.1 offers it for
  MPI and NCCL only; with Gloo the flag is accepted and changes nothing
  (the build has no hierarchical Gloo operation; measured in hostbench).
Inputs come per compute speed (hostbench --speeds): each run is checked
against the inputs measured at its own speed; the predictions use full
speed's.
Not modelled: overlap of an allreduce with the rest of the backward pass
(the model adds them), stragglers beyond what the measured negotiation
holds, congestion beyond one link per host (a switch with full bisection
is assumed), TCP's slow start after idle, and Gloo's per-message cost
growing with P (measured at P = 2 only: it is in overhead and negotiation
once per round, not per ring step).
"""
import argparse
import collections
import json
import math
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from legacy_hvd.model import cnn  # noqa: E402

FLOAT32_BYTES = 4
PAYLOAD_SHARE = 1448.0 / 1514   # TCP payload per byte tc counts
STOP_FLAG_BYTES = 12             # the three-float allreduce every step
LAST_GRADIENT = "conv1/weights"  # the backward pass computes it last
DEFAULT_RTT_MS = 0.025           # measured on the emulated link (veth)

# A network setting: link in Mbit/s (tc's rate), one-way latency in ms,
# and the knobs.
Setting = collections.namedtuple(
    "Setting", "link_mbit latency_ms fp16 fusion cycle_ms accumulate "
    "hierarchical")
Setting.__new__.__defaults__ = (False, True, 1.0, 1, False)
# compute_ms: one rank's step on its own core; overhead_ms: per round, in
# the allreduce; rounds: [(gradient bytes, other bytes), ...] as fused (or
# not). fp16_ms: what float16 costs beyond the bytes (the casts, Gloo's
# float16 sums in software), per allreduce step.
# shared_ms: {ranks per core: compute ms per step} measured with that many
# ranks on one core (loopback 1xR runs); time slicing costs more than R x.
# negotiation_ms: per round, what a round costs outside its allreduce
# (negotiation_ms()). overhead, negotiation and fp16 are measured across two
# hosts with the wire taken away (2x1 over the unlimited link).
Inputs = collections.namedtuple("Inputs", "compute_ms overhead_ms rounds "
                                "unfused_rounds fp16_ms shared_ms "
                                "negotiation_ms")
Inputs.__new__.__defaults__ = (0.0, None, 0.0)
UNLIMITED = "unlimited"          # hostbench's link without tc
DEFAULT_SPEED = "full"


def gradient_bytes():
  """{variable: bytes of its float32 gradient}, from the model's shapes."""
  return {name: FLOAT32_BYTES * _product(shape)
          for name, shape in cnn.PARAM_SHAPES.items()}


def _product(shape):
  out = 1
  for n in shape:
    out *= n
  return out


def fused_rounds(sizes=None):
  """The rounds the timeline shows with fusion, as (gradient bytes, other
  bytes): the stop flag alone (ready at the step's start, reduced every
  batch), then the gradients the backward pass has ready when Horovod's
  loop next wakes: the dense layer's and the biases, then the
  convolution's weights (the backward pass's last)."""
  sizes = sizes or gradient_bytes()
  last = sizes[LAST_GRADIENT]
  return [(0, STOP_FLAG_BYTES), (sum(sizes.values()) - last, 0), (last, 0)]


def unfused_rounds(sizes=None):
  """Without fusion: the stop flag alone, and each gradient alone."""
  sizes = sizes or gradient_bytes()
  return [(0, STOP_FLAG_BYTES)] + [(v, 0) for v in sizes.values()]


def ring_ms(nbytes, ranks, link_mbit, latency_ms):
  """A ring allreduce of `nbytes` over `ranks`, one link per rank's edge:
  2 (P-1)/P x bytes on the wire, 2 (P-1) latencies."""
  if ranks <= 1 or nbytes <= 0:
    return 0.0
  wire = nbytes * 8 / (link_mbit * PAYLOAD_SHARE * 1e3)   # ms
  return 2.0 * (ranks - 1) / ranks * wire + 2 * (ranks - 1) * latency_ms


def comm_ms(inputs, hosts, ranks_per_host, setting):
  """Time per batch for N x R ranks beyond the compute: the allreduces and
  their negotiation."""
  return (allreduce_ms(inputs, hosts, ranks_per_host, setting)
          + negotiation_ms(inputs, hosts, ranks_per_host, setting))


def allreduce_ms(inputs, hosts, ranks_per_host, setting):
  """The allreduces of one batch (what the timeline's ALLREDUCE phases
  cover): overhead, bytes and ring latencies per round; the gradients'
  rounds once per `accumulate` batches, the stop flag's every batch."""
  ranks = hosts * ranks_per_host
  if ranks <= 1:
    return 0.0
  total = 0.0
  for grads, other in _rounds(inputs, setting):
    nbytes = grads / (2 if setting.fp16 else 1) + other
    ring = hosts if setting.hierarchical else ranks
    cost = inputs.overhead_ms
    if hosts > 1:
      cost += ring_ms(nbytes, ring, setting.link_mbit, setting.latency_ms)
    total += cost / (setting.accumulate if grads else 1)
  return total


def negotiation_ms(inputs, hosts, ranks_per_host, setting):
  """What one batch spends outside its allreduces: per round the measured
  negotiation (Horovod's loop agreeing that every rank has the tensor: the
  next cycle, a cache-bit allreduce of a few bytes, waiting for the last
  rank, the hand-back to TensorFlow) and, that allreduce being a Gloo ring
  over all ranks too, 2 (P - 1) one-way latencies; per allreduce step the
  longer cycle's wait and fp16's cost."""
  ranks = hosts * ranks_per_host
  if ranks <= 1:
    return 0.0
  # The first gradients of a step find Horovod's loop asleep and wait half
  # a cycle on average (the default 1 ms is in the measured negotiation);
  # later ones arrive while it is busy with the first.
  once = max((setting.cycle_ms - 1.0) / 2, 0.0)
  if setting.fp16:
    once += inputs.fp16_ms
  total = once / setting.accumulate
  for grads, _ in _rounds(inputs, setting):
    cost = inputs.negotiation_ms
    if hosts > 1:
      cost += 2 * (ranks - 1) * setting.latency_ms
    total += cost / (setting.accumulate if grads else 1)
  return total


def _rounds(inputs, setting):
  return inputs.rounds if setting.fusion else inputs.unfused_rounds


def compute_ms(inputs, cpu_share):
  """One step's compute with `cpu_share` ranks per core: measured for that
  share if the inputs have it, else share x one rank's."""
  measured = (inputs.shared_ms or {}).get(cpu_share)
  return measured if measured else inputs.compute_ms * cpu_share


def step_ms(inputs, hosts, ranks_per_host, setting, cpu_share=1):
  """Predicted time of one global step (one batch on every rank)."""
  return (compute_ms(inputs, cpu_share)
          + comm_ms(inputs, hosts, ranks_per_host, setting))


def efficiency(inputs, hosts, ranks_per_host, setting, cpu_share=1):
  """Throughput per rank relative to one rank alone (no allreduce), at the
  same CPU share."""
  compute = compute_ms(inputs, cpu_share)
  return compute / step_ms(inputs, hosts, ranks_per_host, setting, cpu_share)


def emulated_share(hosts, ranks_per_host, cores):
  """Ranks per core on the emulated hosts (one core per host, round robin)."""
  return ranks_per_host * int(math.ceil(hosts / float(cores)))


# -- from hostbench's measurements ------------------------------------------
def inputs_from(runs):
  """Inputs from hostbench runs of one compute speed: compute from the
  loopback 1x1; overhead, negotiation and fp16's cost from 2x1 over the
  unlimited link (a core per rank, as on a cluster, and no wire to speak
  of); the compute of R ranks sharing a core from loopback 1xR. A later run
  of a case replaces an earlier one."""
  loopback = {r["case"]: r for r in runs if r["link"] == "loopback"}
  free = {r["case"]: r for r in runs if r["link"] == UNLIMITED}
  missing = ["{} over loopback".format(c) for c in ("1x1",)
             if c not in loopback] + ["2x1 over {}".format(UNLIMITED)
                                      for c in ("2x1",) if c not in free]
  if missing:
    raise ValueError("the measurements lack {} (hostbench --links {},... "
                     "--cases model runs them)".format(
                         " and ".join(missing), UNLIMITED))
  rounds = fused_rounds()
  compute = loopback["1x1"]["step_ms"]
  base = free["2x1"]
  # The allreduce phases themselves, and what the step spends beyond its
  # compute and them: both per round, with the wire nearly free.
  overhead = base["comm_ms"] / len(rounds)
  negotiation = max(base["step_ms"] - compute - base["comm_ms"], 0.0) / len(
      rounds)
  fp16 = free.get("2x1-fp16")
  # fp16's whole cost (the casts are TF ops outside the allreduce, the
  # float16 sums inside it), with no bytes to save.
  fp16_ms = max(fp16["step_ms"] - base["step_ms"], 0.0) if fp16 else 0.0
  inputs = Inputs(compute_ms=compute, overhead_ms=overhead, rounds=rounds,
                  unfused_rounds=unfused_rounds(), fp16_ms=fp16_ms,
                  negotiation_ms=negotiation)
  # R ranks on one core: their step less Horovod's rounds on one host.
  shared = {int(c[2:]): r["step_ms"] - comm_ms(inputs, 1, int(c[2:]),
                                                Setting(0.0, 0.0))
            for c, r in loopback.items()
            if c.startswith("1x") and c[2:].isdigit() and c != "1x1"}
  return inputs._replace(shared_ms=shared)


def by_speed(runs):
  """{speed: its runs}, in the order the speeds first appear (files from
  before --speeds: one speed, full)."""
  speeds = {}
  for run in runs:
    speeds.setdefault(run.get("speed", DEFAULT_SPEED), []).append(run)
  return speeds


def setting_of(case, link, latency_ms):
  """The Setting a hostbench case ran with."""
  knob = case.split("-", 1)[1] if "-" in case else ""
  mbit = {"loopback": 0.0, UNLIMITED: float("inf")}.get(link)
  mbit = _rate_mbit(link) if mbit is None else mbit
  return Setting(mbit, latency_ms, fp16=knob == "fp16",
                 fusion=knob != "nofusion",
                 cycle_ms=10.0 if knob == "cycle10" else 1.0,
                 accumulate=2 if knob == "accumulate2" else 1,
                 # Gloo has no hierarchical allreduce: the measured run is a
                 # flat ring, and so is the prediction for it.
                 hierarchical=False)


def _rate_mbit(rate):
  from tools import testhosts
  return testhosts.rate_mbit(rate)


def check(runs, inputs, latency_ms, cores):
  """Predicted vs measured step time for every measured run."""
  rows = []
  for run in runs:
    hosts, ranks = run["hosts"], run["ranks_per_host"]
    setting = setting_of(run["case"], run["link"], latency_ms)
    share = emulated_share(hosts, ranks, cores)
    predicted = step_ms(inputs, hosts, ranks, setting, share)
    rows.append({"case": run["case"], "link": run["link"],
                 "speed": run.get("speed", DEFAULT_SPEED),
                 "hosts": hosts, "ranks_per_host": ranks, "cpu_share": share,
                 "measured_ms": run["step_ms"], "predicted_ms": predicted,
                 "measured_comm_ms": run["comm_ms"],
                 "predicted_comm_ms": allreduce_ms(inputs, hosts, ranks,
                                                   setting),
                 # The rest of the step beyond one rank's compute.
                 "measured_rest_ms": run["step_ms"] - run["comm_ms"]
                 - compute_ms(inputs, share),
                 "predicted_rest_ms": negotiation_ms(inputs, hosts, ranks,
                                                     setting),
                 "error": predicted / run["step_ms"] - 1})
  return rows


CURVES = [  # label, link Mbit/s, RTT in ms (None: the measured), ranks
    # per host, knobs
    ("100 Mbit/s", 100, None, 1, {}),
    ("100 Mbit/s, fp16", 100, None, 1, {"fp16": True}),
    ("100 Mbit/s, accumulate 2", 100, None, 1, {"accumulate": 2}),
    ("1 Gbit/s", 1000, None, 1, {}),
    ("1 Gbit/s, fp16", 1000, None, 1, {"fp16": True}),
    ("10 Gbit/s", 10000, None, 1, {}),
    ("10 Gbit/s, RTT 0.5 ms, 4 ranks/host", 10000, 0.5, 4, {}),
    ("10 Gbit/s, RTT 0.5 ms, 4 ranks/host, hierarchical", 10000, 0.5, 4,
     {"hierarchical": True}),
]


def hosts_axis(max_hosts):
  hosts, n = [], 1
  while n < max_hosts:
    hosts.append(n)
    n *= 2
  return hosts + [max_hosts]


def predictions(inputs, rtt_ms, max_hosts):
  """{label: [(hosts, ranks per host, step ms, efficiency)]} for a real
  cluster (a core per rank, cpu_share 1)."""
  out = {}
  for label, mbit, rtt, ranks, knobs in CURVES:
    setting = Setting(mbit, (rtt_ms if rtt is None else rtt) / 2, **knobs)
    out[label] = [(n, ranks, step_ms(inputs, n, ranks, setting),
                   efficiency(inputs, n, ranks, setting))
                  for n in hosts_axis(max_hosts)]
  return out


def plot(path, inputs, curves, rows, rtt_ms, cores):
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  figure, (left, right) = plt.subplots(1, 2, figsize=(11, 5.2), dpi=80)
  for label, points in curves.items():
    left.plot([p[0] for p in points], [p[3] for p in points], label=label,
              linestyle="--" if "fp16" in label or "accumulate" in label
              else "-")
  left.set_xscale("log", base=2)
  left.set_ylim(0, 1.05)
  left.set_xlabel("hosts (1 rank each unless said)")
  left.set_ylabel("scaling efficiency")
  left.set_title("Predicted: a cluster, a core per rank", fontsize=10)
  figure.legend(*left.get_legend_handles_labels(), fontsize=8, ncol=3,
                loc="lower left", bbox_to_anchor=(0.01, 0.0))
  left.grid(alpha=0.3)
  # The check: emulated hosts, 1 rank per host, the model with CPU sharing.
  colors = {"100mbit": "C0", "1gbit": "C3"}
  for link, color in colors.items():
    hosts = [1, 2, 3, 4]
    setting = Setting(_rate_mbit(link), rtt_ms / 2)
    right.plot(hosts, [efficiency(inputs, n, 1, setting,
                                  emulated_share(n, 1, cores))
                       for n in hosts], color=color,
               label="model, " + link)
    measured = [r for r in rows if r["link"] == link
                and r["ranks_per_host"] == 1 and r["case"][3:] == ""]
    right.plot([r["hosts"] for r in measured],
               [compute_ms(inputs, r["cpu_share"]) / r["measured_ms"]
                for r in measured], "o", color=color,
               label="measured, " + link)
  right.set_ylim(0, 1.05)
  right.set_xticks([1, 2, 3, 4])
  right.set_xlabel("emulated hosts (1 rank each; 3-4 hosts share cores)")
  right.set_title("Checked: emulated hosts, measured points", fontsize=10)
  right.legend(fontsize=7)
  right.grid(alpha=0.3)
  figure.tight_layout(rect=(0, 0.13, 1, 1))
  figure.savefig(path)
  plt.close(figure)


def main(argv=None):
  parser = argparse.ArgumentParser(prog="scaling_model",
                                   description=__doc__.splitlines()[0])
  parser.add_argument("--measured", nargs="+", required=True,
                      help="hostbench.json files (tools/hostbench.py)")
  parser.add_argument("--out", required=True)
  parser.add_argument("--rtt_ms", type=float, default=DEFAULT_RTT_MS,
                      help="the link's round trip (tools/linkcheck.py)")
  parser.add_argument("--max_hosts", type=int, default=256)
  parser.add_argument("--plot", help="PNG path (default OUT/scaling.png)")
  args = parser.parse_args(argv)
  runs, cores = [], os.cpu_count()
  try:
    for path in args.measured:
      with open(path) as f:
        report = json.load(f)
      runs += [dict(r, source=path) for r in report["runs"]]
      cores = report.get("cpu_count", cores)
    speeds = {speed: inputs_from(measured)
              for speed, measured in by_speed(runs).items()}
  except (OSError, ValueError, KeyError) as e:
    parser.error("--measured: {}".format(e))
  rows = [row for speed, measured in by_speed(runs).items()
          for row in check(measured, speeds[speed], args.rtt_ms / 2, cores)]
  # The predictions for a cluster: the first speed's inputs (full, if
  # measured).
  inputs = speeds.get(DEFAULT_SPEED, next(iter(speeds.values())))
  curves = predictions(inputs, args.rtt_ms, args.max_hosts)
  os.makedirs(args.out, exist_ok=True)
  plot(args.plot or os.path.join(args.out, "scaling.png"), inputs, curves,
       [r for r in rows if r["speed"] == DEFAULT_SPEED] or rows,
       args.rtt_ms, cores)
  lines = []
  for speed, each in speeds.items():
    lines.append(
        "Inputs at {} speed: compute {:.2f} ms per step on one core (1x1; "
        "shared cores: {}), per allreduce round overhead {:.2f} ms and "
        "negotiation {:.2f} ms (2x1 over {}), fp16 {:.2f} ms per step, "
        "rounds {} bytes, RTT {} ms".format(
            speed, each.compute_ms, {k: round(v, 2) for k, v in
                                     (each.shared_ms or {}).items()},
            each.overhead_ms, each.negotiation_ms, UNLIMITED, each.fp16_ms,
            [g + o for g, o in each.rounds], args.rtt_ms))
  lines += ["", "| case | link | speed | ranks per core | measured ms | "
            "predicted ms | error | allreduce measured / predicted ms | "
            "negotiation: measured rest / predicted ms |",
            "|---|---|---|---|---|---|---|---|---|"]
  lines += ["| {case} | {link} | {speed} | {cpu_share} | {measured_ms:.1f} | "
            "{predicted_ms:.1f} | {error:+.0%} | {measured_comm_ms:.1f} / "
            "{predicted_comm_ms:.1f} | {measured_rest_ms:.1f} / "
            "{predicted_rest_ms:.1f} |".format(**r) for r in rows]
  lines += ["", "| hosts | " + " | ".join(curves) + " |",
            "|---|" + "---|" * len(curves)]
  for i, n in enumerate(hosts_axis(args.max_hosts)):
    lines.append("| {} | ".format(n) + " | ".join(
        "{:.0%} ({:.0f} ms)".format(c[i][3], c[i][2])
        for c in curves.values()) + " |")
  with open(os.path.join(args.out, "scaling.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  with open(os.path.join(args.out, "scaling.json"), "w") as f:
    json.dump({"inputs": {speed: each._asdict()
                          for speed, each in speeds.items()},
               "check": rows, "predictions": curves}, f, indent=2)
  print("\n".join(lines))
  return 0


if __name__ == "__main__":
  sys.exit(main())
