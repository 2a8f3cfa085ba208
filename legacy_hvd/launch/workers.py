"""Starts a tf.distribute job's workers as horovodrun starts a Horovod job's
ranks: one process per slot of the hosts, each told the cluster by TF_CONFIG.

    python -m legacy_hvd.launch.workers -H lh1:2,lh2:2 [--port=23456] -- \\
        python -m legacy_hvd.train_mwms --batch_size=64

Worker k of a host listens on --port + k; rank 0, the chief, is the first
host's first. A remote worker is an ssh login running the command in this
directory (a shared file system, as horovodrun assumes). No TensorFlow, no
Horovod."""
import collections
import json
import os
import random
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time

from absl import flags

from flags import output as output_flags
from flags import workers as workers_flags
from legacy_hvd.common import cli
from legacy_hvd.common import signals
from legacy_hvd.launch import hostlists
from legacy_hvd.launch import writable

GRACE_SECONDS = 5   # between SIGTERM and SIGKILL, horovodrun's too
PORT_RANGE = (20000, 32000)   # where a first worker port is picked
# After a worker failed, how long the others get to end on their own: a
# survivor learns of a dead peer from TF's coordination service (heartbeat
# time-out 10 s) and names it (Gloo, under horovodrun, fails in milliseconds).
SURVIVORS_SECONDS = 20
# What a worker on another host gets of this environment besides TF_CONFIG:
# where Python and its packages are, and the project's own settings.
FORWARDED = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV")
FORWARDED_PREFIXES = ("LEGACY_HVD_", "TF_")

Worker = collections.namedtuple("Worker", "host rank tf_config")


def free_ports(count):
  """The first of `count` consecutive TCP ports free here now, below the
  kernel's ephemeral range (where outgoing connections take theirs)."""
  while True:
    first = random.randrange(*PORT_RANGE)
    try:
      for port in range(first, first + count):
        with socket.socket() as probe:
          probe.bind(("", port))
    except OSError:
      continue
    return first


def plan(hosts, port):
  """[(host, slots)] -> a Worker per slot, in rank order: host h's k-th
  worker listens on `port` + k, and every TF_CONFIG lists them all."""
  addresses = [(host, "{}:{}".format(host, port + k))
               for host, slots in hosts for k in range(slots)]
  cluster = {"worker": [address for _, address in addresses]}
  return [Worker(host, rank, json.dumps(
      {"cluster": cluster, "task": {"type": "worker", "index": rank}}))
          for rank, (host, _) in enumerate(addresses)]


def start(worker, command, env, ssh_timeout, ssh_port=None, held=()):
  """The worker's process (a Popen; its stdout and stderr piped). `held`:
  signals.blocked_start(), a stop signal kept until the worker takes it."""
  variables = dict(env, TF_CONFIG=worker.tf_config)
  if hostlists.is_local(worker.host):
    argv, child_env = [*held, *command], variables
  else:
    forwarded = {name: value for name, value in variables.items()
                 if name in FORWARDED or name.startswith(FORWARDED_PREFIXES)}
    remote = "cd {} > /dev/null 2>&1; exec env {} {} {}".format(
        shlex.quote(os.getcwd()), " ".join(held[1:]),   # (the hosts alike)
        " ".join("{}={}".format(name, shlex.quote(value))
                 for name, value in sorted(forwarded.items())),
        " ".join(shlex.quote(word) for word in command))
    argv = hostlists.ssh_command(worker.host, ssh_timeout, ssh_port) + [remote]
    child_env = env
  # Its own session: a terminal's Ctrl-C or hang-up comes once, by Forward.
  return subprocess.Popen(argv, env=child_env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          start_new_session=True)


def pass_through(rank, process):
  """Started threads copying the worker's lines to ours, tagged as horovodrun
  tags them."""
  def copy(stream, name, out):
    for line in iter(stream.readline, b""):
      out.write("[{}]<{}>:{}".format(
          rank, name, line.decode("utf-8", "replace")))
      out.flush()
  threads = [threading.Thread(target=copy, args=(process.stdout, "stdout",
                                                 sys.stdout), daemon=True),
             threading.Thread(target=copy, args=(process.stderr, "stderr",
                                                 sys.stderr), daemon=True)]
  for thread in threads:
    thread.start()
  return threads


def wait_all(processes, poll_seconds=0.1):
  """Waits for every worker; after the first non-zero exit the others get
  SURVIVORS_SECONDS, then SIGTERM, then SIGKILL. (exit code, its rank or
  None)."""
  first = None
  while True:
    codes = [p.poll() for p in processes]
    if first is None:
      failed = [(code, rank) for rank, code in enumerate(codes)
                if code not in (None, 0)]
      if failed:
        first = failed[0]
        deadline = time.monotonic() + SURVIVORS_SECONDS
    if None not in codes:
      return first or (0, None)
    if first is not None and time.monotonic() > deadline:
      end(processes)
      return first
    time.sleep(poll_seconds)


def end(processes):
  """SIGTERM to every worker still running, SIGKILL after GRACE_SECONDS."""
  for process in processes:
    if process.poll() is None:
      process.send_signal(signal.SIGTERM)
  deadline = time.monotonic() + GRACE_SECONDS
  while time.monotonic() < deadline and any(
      p.poll() is None for p in processes):
    time.sleep(0.1)
  for process in processes:
    if process.poll() is None:
      process.kill()
    process.wait()


# -- the launcher -------------------------------------------------------------
FLAGS = flags.FLAGS


class Forward(signals.Recorder):
  """The stop signals and SIGHUP, passed on to every worker process."""

  def __init__(self):
    super().__init__(signals.LAUNCHER_HANDLED)
    self.processes = []

  def react(self, signum):
    for process in self.processes:
      if process.poll() is None:
        process.send_signal(signals.passed_on(signum))


def main(argv):
  command = argv[1:]
  if not command:
    cli.fail("no command to run; expected `-- python -m "
             "legacy_hvd.train_mwms ...` after the flags", cli.USAGE_ERROR)
  hosts = (hostlists.parse_hosts(FLAGS.hosts) if FLAGS.hosts else
           hostlists.parse_hostfile(FLAGS.hostfile))
  # Rank 0, the chief, writes the model directory: checked if it is here.
  writable.require(output_flags.model_dir_of(command)
                   if hostlists.is_local(hosts[0][0]) else None,
                   nothing="no worker was started")
  planned = plan(hosts, FLAGS.port or free_ports(
      max(slots for _, slots in hosts)))
  forward = Forward().install()
  held = signals.blocked_start()
  copying = []
  for worker in planned:
    process = start(worker, command, dict(os.environ),
                    FLAGS.ssh_timeout, FLAGS.ssh_port, held)
    forward.processes.append(process)
    copying += pass_through(worker.rank, process)
  code, rank = wait_all(forward.processes)
  # A worker's last lines (its error line among them) may still be in its
  # pipe when it has exited: copied before this exits.
  for thread in copying:
    thread.join(timeout=GRACE_SECONDS)
  if rank is not None:
    print("legacy_hvd.launch.workers: rank {} exited with code {}; ended "
          "the others".format(rank, code), file=sys.stderr, flush=True)
  sys.exit(code if code >= 0 else 128 - code)


def run():
  """Console-script entry point (legacy-hvd-launch-workers)."""
  workers_flags.define_workers()
  cli.run_launcher(main)


if __name__ == "__main__":
  run()
