"""Starts a tf.distribute job's workers, as horovodrun starts a Horovod
job's ranks: one per slot of the hosts, each given TF_CONFIG.

    python -m legacy_hvd.launch_workers -H localhost:4 -- \\
        python -m legacy_hvd.train_mwms --batch_size=64
    python -m legacy_hvd.launch_workers -H lh1:2,lh2:2 [--port=23456] -- ...

TensorFlow ships no launcher: MultiWorkerMirroredStrategy reads the cluster
from TF_CONFIG (or from a cluster resolver, SlurmClusterResolver under
Slurm: legacy_hvd.slurm needs no TF_CONFIG). This is the one the project
uses without a scheduler, with horovodrun's host list: worker k of a host
listens on --port + k; rank 0, the chief, is the first host's first. Each
worker's lines come through tagged `[rank]<stream>:`; when one exits
non-zero, the others are ended (legacy_hvd/launch/workers.py) and this
exits with its code. SIGTERM, SIGINT and SIGUSR1 are passed on to the
workers on this host (on the others, their peers' failures end them).
No TensorFlow, no Horovod.
"""
import os
import sys

from absl import flags

from flags import workers as workers_flags
from legacy_hvd.common import cli
from legacy_hvd.common import signals
from legacy_hvd.launch import hostlists
from legacy_hvd.launch import workers

FLAGS = flags.FLAGS


class Forward(signals.Recorder):
  """The stop signals, passed on to every worker process."""

  def __init__(self):
    super().__init__(signals.HANDLED)
    self.processes = []

  def react(self, signum):
    for process in self.processes:
      if process.poll() is None:
        process.send_signal(signum)


def main(argv):
  command = argv[1:]
  if not command:
    cli.fail("no command to run; expected `-- python -m "
             "legacy_hvd.train_mwms ...` after the flags", cli.USAGE_ERROR)
  hosts = (hostlists.parse_hosts(FLAGS.hosts) if FLAGS.hosts else
           hostlists.parse_hostfile(FLAGS.hostfile))
  planned = workers.plan(hosts, FLAGS.port or workers.free_ports(
      max(slots for _, slots in hosts)))
  forward = Forward().install()
  copying = []
  for worker in planned:
    process = workers.start(worker, command, dict(os.environ),
                            FLAGS.ssh_timeout, FLAGS.ssh_port)
    forward.processes.append(process)
    copying += workers.pass_through(worker.rank, process)
  code, rank = workers.wait_all(forward.processes)
  # A worker's last lines (its error line among them) may still be in its
  # pipe when it has exited: copied before this exits.
  for thread in copying:
    thread.join(timeout=workers.GRACE_SECONDS)
  if rank is not None:
    print("{}: rank {} exited with code {}; ended the others".format(
        "legacy_hvd.launch_workers", rank, code), file=sys.stderr, flush=True)
  sys.exit(code if code >= 0 else 128 - code)


def run():
  """Console-script entry point (legacy-hvd-launch-workers)."""
  workers_flags.define_workers()
  cli.run_launcher(main)


if __name__ == "__main__":
  run()
