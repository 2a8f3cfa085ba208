"""Launching the main job on the test hosts, as a user would from lh1.

    data_dir = put_data(cluster, ["lh1", "lh2"])   # each host's own copy
    job = launch(cluster, "-H", "lh1:2,lh2:2", model_dir=..., log=path)
    process = run(cluster, "-H", "lh1:2,lh2:2", model_dir=...)   # waits

Every job runs `horovodrun -np N ... python -m legacy_hvd.train` (or another
entry point: `module`) inside lh1 (the launcher must run on a host: see
tools/testhosts.py), with this test's Python on every host, and its output
in a file the test reads; helpers.job_argv writes its command line.
"""
import os
import re
import shutil

from legacy_hvd.data import embedded
from tests import helpers

JOB_TIMEOUT = 300      # seconds for one job on the hosts (2 cores, shared)
START_LINE = re.compile(
    r"Rank (\d+) \(local (\d+) of (\d+)\): (pinned to|unpinned, on) cores "
    r"([\d,-]+); .*; host (\S+), cross rank (\d+) of (\d+); "
    r"visible_device_list '(\d*)'")
DATA = "data"          # under the scratch directory


def put_data(cluster, names, subdir=DATA):
  """The generated CIFAR-10-shaped dataset on the scratch disk of each of
  `names`; returns its path as every host sees it."""
  source = embedded.ensure_generated(os.path.join(cluster.dir, "dataset"))
  for name in names:
    target = os.path.join(cluster.host(name).scratch, subdir,
                          "cifar-10-batches-bin")
    if not os.path.isdir(target):
      shutil.copytree(source, target)
  return os.path.join(cluster.scratch, subdir, "cifar-10-batches-bin")


def launcher_args(hosts_args, interface="eth0"):
  # helpers.job_argv names Gloo (also where Horovod has MPI built in, whose
  # horovodrun would pick mpirun): test_hosts_mpi.py runs mpirun itself.
  argv = list(hosts_args)
  if interface:
    argv += ["--network-interface", interface]
  return argv


def launch(cluster, np, hosts_args, model_dir, args, log, env=None,
           interface="eth0", module="legacy_hvd.train"):
  """Starts the job on lh1 in the background; output to the open file `log`
  (train_mwms's workers: by legacy_hvd.launch.workers, over the host names,
  no interface to pick)."""
  if module in helpers.STRATEGY_TRAINERS:
    interface = None
  return helpers.start(np, module, [f"--model_dir={model_dir}", *args], log,
                       env=env, popen=cluster.hosts[0].popen,
                       launcher_args=launcher_args(hosts_args, interface))


def run(cluster, np, hosts_args, model_dir, args, log_path, env=None,
        interface="eth0", timeout=JOB_TIMEOUT):
  """Runs the job on lh1 to the end; (exit code, output)."""
  return to_the_end(lambda log: launch(cluster, np, hosts_args, model_dir,
                                       args, log, env, interface),
                    log_path, timeout)


def to_the_end(start, log_path, timeout=JOB_TIMEOUT):
  """start(log), a job writing to the open file `log`, waited for (killed
  after `timeout`); (exit code, output)."""
  with open(log_path, "w") as log:
    job = start(log)
    try:
      job.wait(timeout=timeout)
    finally:
      if job.poll() is None:
        job.kill()
        job.wait()
  with open(log_path) as f:
    return job.returncode, f.read()


def start_lines(output):
  """{rank: (host, local rank, local size, cross rank, cross size,
  visible_device_list)} from every rank's start line."""
  found = {}
  for m in START_LINE.finditer(output):
    found[int(m.group(1))] = (m.group(6), int(m.group(2)), int(m.group(3)),
                              int(m.group(7)), int(m.group(8)), m.group(9))
  return found
