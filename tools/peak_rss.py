"""Runs a module as `python -m` does; at exit records the process's peak RSS.

    python -m tools.peak_rss DIR module [args ...]
    horovodrun -np 4 python -m tools.peak_rss DIR legacy_hvd.train ...

Writes DIR/rank-<r>.json: {"rank": r, "peak_rss_bytes": n}, r the rank the
launcher gave (TF_CONFIG's index for tf.distribute's workers; 0 without
one). n is getrusage's ru_maxrss: the kernel's
high-water mark of this process's resident memory, so a short peak between
two samples is never missed, and children (none here) are not counted.
tools/benchmark.py starts every case's ranks through it.
"""
import atexit
import json
import os
import resource
import runpy
import sys

from legacy_hvd.common import cli

_RANK_VARIABLES = ("HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK")


def rank():
  for variable in _RANK_VARIABLES:
    if variable in os.environ:
      return int(os.environ[variable])
  # A tf.distribute worker (legacy_hvd.launch.workers): its index.
  workers = cli.tf_config_workers()
  return workers[1] if workers else 0


def write_peak(directory):
  # Linux reports ru_maxrss in KiB.
  peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
  path = os.path.join(directory, f"rank-{rank()}.json")
  with open(path, "w") as f:
    json.dump({"rank": rank(), "peak_rss_bytes": peak}, f)


def main():
  directory, module = sys.argv[1], sys.argv[2]
  atexit.register(write_peak, directory)
  sys.argv = [module] + sys.argv[3:]
  runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
  main()
