"""A model directory claimed by the one job that trains in it.

Rank 0 writes the claim (its host and pid, its launcher's run, its Slurm job)
into the directory before it touches anything else there, renews it every
RENEW_SECONDS, and removes it when it ends. A second job started on the
directory finds the claim held and stops in one line naming the first.
A claim is free for a job of the same run (the supervisor's relaunch,
Slurm's requeue: the launcher's mark, cli.ROUND, is the same), when its
process is gone (a job on this host, killed), and, for a job on another
host (killed, or its host lost), when rank 0 watched it for WATCH_SECONDS
without a renewal or it is older than LAPSE_SECONDS: watching, not the
hosts' clocks, tells. No TensorFlow (the launchers read it); Python
3.7-compatible."""
import atexit
import contextlib
import fcntl
import json
import os
import socket
import threading
import time

from legacy_hvd.common import cli
from legacy_hvd.common import json_files

FILE = "claim.json"
RENEW_SECONDS = 5.0
# A claim not renewed while rank 0 watched it this long: its job is gone.
# Three renewals: one late under load is not taken for a lost job.
WATCH_SECONDS = 3
LAPSE_SECONDS = 60.0   # a claim this old by this host's clock: gone at once

_held = []   # this process's claim: [(pid, path, text)]


def path_in(model_dir):
  return os.path.join(model_dir, FILE)


def this_job(env=None):
  """The claim this process would write: who it is, and the run it is of."""
  env = os.environ if env is None else env
  mark = env.get(cli.ROUND, "")
  return {"host": socket.gethostname(), "pid": os.getpid(),
          "process_start": (_stat(os.getpid()) or (None, None))[1],
          "run": mark.rsplit(".", 1)[0] if mark else None,
          "slurm_job": env.get("SLURM_JOB_ID"),
          "since": time.strftime("%Y-%m-%d %H:%M:%S")}


def holder(model_dir, job, watch=False):
  """The claim another job holds on `model_dir`, or None when it is free
  for `job`. A claim made on another host is held only if it is renewed
  while watched (watch: rank 0 watches; a launcher cannot tell)."""
  path = path_in(model_dir)
  held = json_files.read_json(path)
  if not isinstance(held, dict):
    return None
  if held.get("run") and held.get("run") == job["run"]:
    return None   # this job's earlier round: relaunched or requeued
  if held.get("host") == job["host"]:
    alive = _alive(held.get("pid"), held.get("process_start"))
    return held if alive else None
  if not watch or _age(path) > LAPSE_SECONDS:
    return None
  return held if _renewed(path, WATCH_SECONDS * RENEW_SECONDS) else None


def held_line(model_dir, held):
  """The one line for a model directory another job holds."""
  who = "rank 0 on {}, pid {}".format(held.get("host"), held.get("pid"))
  if held.get("slurm_job"):
    who += ", Slurm job {}".format(held["slurm_job"])
  return ("--model_dir={}: in use by another job ({}, since {}); expected a "
          "model directory no other job trains in: wait for that job to end, "
          "or give another --model_dir".format(model_dir, who,
                                               held.get("since")))


def in_use(model_dir, env=None):
  """The line naming the job that holds `model_dir` against a job of this
  process's run (env: the launcher's, with its cli.ROUND), or None."""
  found = holder(model_dir, this_job(env))
  return held_line(model_dir, found) if found else None


def claim(model_dir, env=None):
  """Rank 0: claims `model_dir` for this job, kept until this process ends;
  returns the line naming the job that holds it instead, or None."""
  job = this_job(env)
  with _locked(model_dir):
    found = holder(model_dir, job, watch=True)
    if found:
      return held_line(model_dir, found)
    path = path_in(model_dir)
    text = json.dumps(job, sort_keys=True)
    json_files.write_text(path, text)
  _held.append((os.getpid(), path, text))
  atexit.register(release)
  threading.Thread(target=_renew, args=(path, text), daemon=True,
                   name="model-dir-claim").start()
  return None


def release():
  """Removes this process's claim, if it still holds it; not a forked
  child's exit (a rank's helper processes inherit _held and atexit)."""
  while _held:
    pid, path, text = _held.pop()
    if pid == os.getpid() and _reads(path) == text:
      with contextlib.suppress(OSError):
        os.remove(path)


def _renew(path, text):
  while True:
    time.sleep(RENEW_SECONDS)
    if (os.getpid(), path, text) not in _held or _reads(path) != text:
      return   # released, or the directory taken over: nothing to renew
    with contextlib.suppress(OSError):
      os.utime(path)


def _age(path):
  try:
    return time.time() - os.stat(path).st_mtime
  except OSError:
    return 0.0


def _renewed(path, seconds):
  """Whether the claim at `path` is renewed (or replaced) within `seconds`;
  False once it is removed (its job ended)."""
  def version():
    try:
      found = os.stat(path)
      return found.st_mtime_ns, found.st_ino
    except OSError:
      return None
  first = version()
  deadline = time.monotonic() + seconds
  while time.monotonic() < deadline:
    time.sleep(seconds / 20)
    now = version()
    if now != first:
      return now is not None
  return False


def _reads(path):
  try:
    with open(path) as f:
      return f.read()
  except OSError:
    return None


@contextlib.contextmanager
def _locked(directory):
  """The directory locked while a claim is judged and written: two jobs
  starting at once do not both take it (where the file system has flock)."""
  try:
    fd = os.open(directory, os.O_RDONLY)
  except OSError:
    yield
    return
  try:
    with contextlib.suppress(OSError):
      fcntl.flock(fd, fcntl.LOCK_EX)
    yield
  finally:
    os.close(fd)   # and the lock with it


def _stat(pid):
  """(state, start) of process `pid` (/proc/PID/stat, fields 3 and 22: the
  start in clock ticks since boot, another for a reused pid); None where
  /proc does not tell."""
  try:
    with open("/proc/{}/stat".format(pid)) as f:
      fields = f.read().rsplit(")", 1)[1].split()
    return fields[0], int(fields[19])
  except (OSError, IndexError, ValueError):
    return None


def _alive(pid, process_start):
  """Whether `pid` on this host is still the process that made the claim."""
  if not isinstance(pid, int):
    return False
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    pass   # another user's process: alive
  stat = _stat(pid)
  if stat is None:
    return True
  state, start = stat
  return state != "Z" and process_start in (None, start)   # Z: killed, unreaped
