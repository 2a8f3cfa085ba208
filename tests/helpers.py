"""Test helpers: launching real horovodrun jobs and reading what they wrote.

Multi-process tests start `horovodrun -np N` in a subprocess with a timeout
and read what the ranks wrote; nothing here mocks Horovod.
"""
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Real CIFAR-10 as JPEGs, shipped beside the project on these machines.
SHARED = os.path.join(os.path.dirname(REPO), "shared")
CIFAR10_JPEG = os.environ.get(
    "LEGACY_HVD_CIFAR10_JPEG", os.path.join(SHARED, "data", "cifar10-jpeg.tar.gz"))
CIFAR10_CONVERTER = os.path.join(SHARED, "tools", "cifar10_jpeg_to_bin.py")
JOB_TIMEOUT = 240   # seconds for one horovodrun job in a test


def horovodrun(np, module, args, timeout=JOB_TIMEOUT, env=None, wrapper=None):
  """Runs `horovodrun -np N python -m module args`; returns CompletedProcess.

  `wrapper` is a shell snippet run in each rank before python (e.g. a umask).
  """
  program = [sys.executable, "-m", module, *args]
  if wrapper:
    program = ["sh", "-c", f'{wrapper}; exec "$@"', "rank", *program]
  argv = ["horovodrun", "-np", str(np), "-H", f"localhost:{np}", *program]
  full_env = dict(os.environ, **(env or {}))
  return subprocess.run(argv, cwd=REPO, env=full_env, capture_output=True,
                        text=True, timeout=timeout)


def run_module(module, args, timeout=JOB_TIMEOUT, env=None):
  """Runs `python -m module args` as one plain process (no launcher)."""
  return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO,
                        env=dict(os.environ, **(env or {})),
                        capture_output=True, text=True, timeout=timeout)


def read_results(model_dir):
  with open(os.path.join(model_dir, "results.json")) as f:
    return json.load(f)


def assert_ok(process):
  assert process.returncode == 0, (
      f"exit {process.returncode}\n--- stdout\n{process.stdout[-4000:]}"
      f"\n--- stderr\n{process.stderr[-6000:]}")


def wait_for(predicate, timeout, what):
  """Polls predicate() until true; AssertionError after `timeout` seconds."""
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    if predicate():
      return
    time.sleep(0.2)
  raise AssertionError("timed out waiting for {}".format(what))


def rank_pid(model_dir, rank):
  """The pid of the trainer process of `rank` for this model_dir."""
  for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
      with open(f"/proc/{pid}/cmdline", "rb") as f:
        cmdline = f.read()
      with open(f"/proc/{pid}/environ", "rb") as f:
        environ = f.read().split(b"\0")
    except OSError:
      continue
    if (b"legacy_hvd.train" in cmdline and str(model_dir).encode() in cmdline
        and f"HOROVOD_RANK={rank}".encode() in environ
        and not cmdline.startswith(b"/bin/sh")):
      return int(pid)
  return None
