"""The pre-flight check: will this job start on these hosts?

    python -m legacy_hvd.launch.preflight -H lh1:2,lh2:2 --data_dir=DIR \\
        [--model_dir=DIR] [--network_interface=eth0]

Run on the launching host with the job's Python; over batch-mode ssh it
checks every host: ssh (reachable), stack (the first host's Python,
TensorFlow, Horovod and build), hostname (resolves to an address on the job's
interface: Gloo uses it whatever --network-interface says), data (--data_dir
validates there), model_dir (writable on rank 0's host). One table, then one
line per problem, exit 1 if any. Python 3.7-compatible."""
import concurrent.futures
import json
import os
import platform
import shlex
import socket
import subprocess
import sys

from absl import app
from absl import flags

from flags import preflight as preflight_flags
from legacy_hvd.common import cli
from legacy_hvd.common import paths
from legacy_hvd.launch import hostlists
from legacy_hvd.launch import writable

FLAGS = flags.FLAGS
SSH_UNREACHABLE = 255    # ssh's exit status for its own failures
NOT_FOUND = 127          # the shell's: no such program
# Horovod's build, as `horovodrun --check-build` reports it.
CONTROLLERS = ("gloo", "mpi")
GPU_OPERATIONS = ("nccl", "ddl", "ccl", "cuda", "rocm")


# -- on each host ------------------------------------------------------------

def stack():
  """Python, TensorFlow and Horovod versions and Horovod's build here."""
  facts = {"python": platform.python_version()}
  try:
    import tensorflow as tf
    facts["tensorflow"] = tf.version.VERSION
    import horovod
    facts["horovod"] = horovod.__version__
    import horovod.tensorflow as hvd
    built = [c for c in CONTROLLERS if getattr(hvd, c + "_built")()]
    gpu = [o for o in GPU_OPERATIONS if getattr(hvd, o + "_built")()]
    facts["build"] = "{}; GPU ops {}".format(
        "+".join(built) or "no controller", "+".join(gpu) or "none")
  except Exception as e:   # a wheel built against another TF fails to load
    facts["import_error"] = "{}: {}".format(type(e).__name__, e).splitlines()[0]
  return facts


def data_state(data_dir):
  """'ok: ...' or the reader's one-line complaint about `data_dir` here."""
  if data_dir is None:
    return True, "not given"
  from legacy_hvd.data import cifar10
  try:
    data = cifar10.load(data_dir)
  except cifar10.DataError as e:
    return False, str(e)
  return True, "ok ({} train, {} test)".format(len(data.train_labels),
                                               len(data.test_labels))


def model_dir_state(path, run=None):
  """Whether rank 0 could create and write `path` (nothing is created), no
  job but one of `run` (a launcher's, cli.ROUND) holding it."""
  problem = writable.model_dir_problem(path, {cli.ROUND: run} if run else {})
  return (False, problem) if problem else (True, "writable")


def probe(request):
  """Everything this host can tell about itself; runs on every host."""
  facts = stack()
  facts["hostname"] = socket.gethostname()
  facts["interfaces"] = hostlists.interfaces()
  try:
    facts["resolves_to"] = socket.gethostbyname(facts["hostname"])
  except OSError as e:
    facts["resolves_to"] = None
    facts["resolve_error"] = str(e)
  facts["data_ok"], facts["data"] = data_state(request.get("data_dir"))
  if request.get("model_dir"):
    facts["model_dir_ok"], facts["model_dir"] = model_dir_state(
        request["model_dir"], request.get("run"))
  return facts


def probe_main(request_json):
  """The remote side: prints probe()'s facts as one JSON line."""
  print(json.dumps(probe(json.loads(request_json))), flush=True)


# -- on the launching host ---------------------------------------------------

def rank0_host(hosts):
  """The host where horovodrun puts rank 0 (Horovod's own assignment of
  ranks to the hosts' slots, in order)."""
  from horovod.runner.common.util import hosts as horovod_hosts
  plan = horovod_hosts.get_host_assignments(
      [horovod_hosts.HostInfo(name, slots) for name, slots in hosts],
      hostlists.slot_count(hosts))
  return next(slot.hostname for slot in plan if slot.rank == 0)


def remote_facts(host, request, ssh_timeout, ssh_port=None):
  """Runs probe() on `host` over ssh (batch mode); its facts, or
  {"unreachable": reason}."""
  code = ("import sys; from legacy_hvd.launch import preflight; "
          "preflight.probe_main(sys.argv[1])")
  remote = "env TF_CPP_MIN_LOG_LEVEL=2 {} -c {} {}".format(
      shlex.quote(sys.executable), shlex.quote(code),
      shlex.quote(json.dumps(request)))
  # As horovodrun, which starts the ranks of its own host without ssh.
  if hostlists.is_local(host):
    argv = ["sh", "-c", remote]
  else:
    argv = hostlists.ssh_command(host, ssh_timeout, ssh_port) + [remote]
  try:
    done = subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True,
                          stdin=subprocess.DEVNULL, timeout=ssh_timeout + 120)
  except subprocess.TimeoutExpired:
    return {"unreachable": "no answer within {} s".format(ssh_timeout + 120)}
  last_error = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
  if done.returncode == SSH_UNREACHABLE:
    return {"unreachable": "ssh in batch mode failed: " + last_error}
  if done.returncode == NOT_FOUND:
    return {"unreachable": "{} is not there ({})".format(sys.executable,
                                                         last_error)}
  try:
    return json.loads(done.stdout.strip().splitlines()[-1])
  except (ValueError, IndexError):
    return {"unreachable": "the check did not run there (exit {}): {}".format(
        done.returncode, last_error)}


def problems(hosts, facts, network_interface, data_dir):
  """One line per problem, each starting with the host it is about."""
  found = []
  reachable = [h for h in hosts if "unreachable" not in facts[h]]
  reference = reachable[0] if reachable else None
  for host in hosts:
    f = facts[host]
    if "unreachable" in f:
      found.append("{}: not reachable: {}".format(host, f["unreachable"]))
      continue
    if "import_error" in f:
      found.append("{}: TensorFlow/Horovod do not load: {}".format(
          host, f["import_error"]))
    for key, name in (("python", "Python"), ("tensorflow", "TensorFlow"),
                      ("horovod", "Horovod"), ("build", "Horovod build")):
      mine, theirs = f.get(key), facts[reference].get(key)
      if host != reference and mine != theirs:
        found.append("{}: {} {}, but {} has {}: every host needs the same "
                     "stack".format(host, name, mine, reference, theirs))
    found.extend(_address_problems(host, f, network_interface))
    if not f["data_ok"]:
      found.append("{}: {}".format(host, f["data"]))
    if f.get("model_dir_ok") is False:
      found.append("{}: {} (rank 0 writes it)".format(host, f["model_dir"]))
  return found


def _address_problems(host, f, network_interface):
  addresses = f["interfaces"]
  if network_interface and network_interface not in addresses:
    return ["{}: no interface {} with an IPv4 address (has: {})".format(
        host, network_interface, ", ".join(sorted(addresses)))]
  if f["resolves_to"] is None:
    return ["{}: its hostname {} does not resolve ({}); Horovod's Gloo needs "
            "it to: add it to /etc/hosts".format(host, f["hostname"],
                                                 f.get("resolve_error"))]
  usable = ({network_interface: addresses[network_interface]}
            if network_interface else
            {i: a for i, a in addresses.items()
             if not a.startswith("127.")})
  if f["resolves_to"] in usable.values():
    return []
  return ["{}: its hostname {} resolves to {}, not to an address of {} ({}): "
          "Horovod's Gloo builds its contexts on that address, so ranks on "
          "other hosts cannot connect; fix /etc/hosts there".format(
              host, f["hostname"], f["resolves_to"],
              network_interface or "a non-loopback interface",
              ", ".join(sorted(usable.values())) or "none")]


def _address_cell(f, network_interface):
  if f["resolves_to"] is None:
    return "{} -> ?".format(f["hostname"])
  names = [i for i, a in f["interfaces"].items() if a == f["resolves_to"]]
  return "{} -> {} ({})".format(f["hostname"], f["resolves_to"],
                                ",".join(names) or "no interface")


def table(hosts, slots, facts, network_interface):
  """The table of facts, one row per host, as text."""
  header = ["host", "slots", "ssh", "python", "tensorflow", "horovod",
            "build", "hostname -> address", "data", "model_dir"]
  rows = [header]
  for host in hosts:
    f = facts[host]
    if "unreachable" in f:
      rows.append([host, str(slots[host]), "FAILED"] + ["-"] * 7)
      continue
    rows.append([host, str(slots[host]),
                 "local" if hostlists.is_local(host) else "ok",
                 f["python"],
                 f.get("tensorflow", "?"), f.get("horovod", "?"),
                 f.get("build", "?"), _address_cell(f, network_interface),
                 f["data"] if f["data_ok"] else "FAILED",
                 f.get("model_dir", "-") if f.get("model_dir_ok", True)
                 else "FAILED"])
  widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
  return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths))
                   .rstrip() for row in rows)


def main(argv):
  del argv
  hosts_slots = (hostlists.parse_hosts(FLAGS.hosts) if FLAGS.hosts
                 else hostlists.parse_hostfile(FLAGS.hostfile))
  hosts = [h for h, _ in hosts_slots]
  slots = dict(hosts_slots)
  requests = {h: {"data_dir": FLAGS.data_dir} for h in hosts}
  if FLAGS.model_dir:
    # Horovod: the model dir is rank 0's, on the host horovodrun gives it.
    requests[rank0_host(hosts_slots)].update(
        model_dir=FLAGS.model_dir, run=os.environ.get(cli.ROUND))
  with concurrent.futures.ThreadPoolExecutor(len(hosts)) as pool:
    futures = {h: pool.submit(remote_facts, h, requests[h], FLAGS.ssh_timeout,
                              FLAGS.ssh_port) for h in hosts}
    facts = {h: futures[h].result() for h in hosts}
  print(table(hosts, slots, facts, FLAGS.network_interface), flush=True)
  found = problems(hosts, facts, FLAGS.network_interface, FLAGS.data_dir)
  # Horovod: horovodrun runs here, and writes here first.
  found += ["this host: " + line for line in writable.problems(
      horovodrun=FLAGS.horovodrun)]
  for problem in found:
    print("{}: error: {}".format("legacy_hvd.launch.preflight", problem),
          file=sys.stderr, flush=True)
  if found:
    sys.exit(cli.INPUT_ERROR)
  print("All {} hosts ready for {} ranks.".format(
      len(hosts), sum(slots.values())), flush=True)


def run():
  """Console-script entry point (legacy-hvd-preflight)."""
  preflight_flags.define_preflight()
  # Not cli.run: it quiets TensorFlow, which this side never imports (the
  # probes import it on each host), and importing it would cost seconds.
  app.run(main, flags_parser=cli.parse_flags)


if __name__ == "__main__":
  run()
