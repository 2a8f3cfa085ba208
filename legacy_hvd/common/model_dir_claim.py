"""A model directory claimed by the one job that trains in it.

Rank 0 writes the claim (its host and pid, its launcher's run, its Slurm job)
into the directory before it touches anything else there, renews it every
RENEW_SECONDS (a count in the file, rewritten: a reader on another NFS
client sees it change), and removes it when it ends. A second job started
on the directory finds the claim held and stops in one line naming the
first. A claim is free for a job of the same run (the supervisor's
relaunch, the Slurm launcher's requeue: the launcher's mark, cli.ROUND, is
the same), when its process is gone (a job on this host, killed), and, for
a job on another host (killed, or its host lost), when rank 0 watched it
for WATCH_RENEWALS renewals' time and saw none: watching, not the hosts'
clocks, tells. A job whose claim another took over (it renewed none for
that long: suspended, stalled) ends in one line. No TensorFlow (the
launchers read it); Python 3.7-compatible."""
import atexit
import contextlib
import fcntl
import json
import os
import socket
import sys
import threading
import time

from legacy_hvd.common import cli
from legacy_hvd.common import json_files

FILE = "claim.json"
RENEW_SECONDS = 5.0
# A claim not renewed while rank 0 watched it this many renewals' time: its
# job is gone. Three: one late under load is not taken for a lost job.
WATCH_RENEWALS = 3
_WHO = ("host", "place", "pid", "process_start")   # a claim's process

_held = []   # this process's claim: [(pid, path, claim)]
_renewing = threading.Lock()   # a renewal is not written after a release


def path_in(model_dir):
  return os.path.join(model_dir, FILE)


def this_job(env=None):
  """The claim this process would write: who it is, and the run it is of."""
  env = os.environ if env is None else env
  mark = env.get(cli.ROUND, "")
  return {"host": socket.gethostname(), "place": _place(), "pid": os.getpid(),
          "process_start": (_stat(os.getpid()) or (None, None))[1],
          "run": mark.rsplit(".", 1)[0] if mark else None,
          "slurm_job": env.get("SLURM_JOB_ID"),
          "since": time.strftime("%Y-%m-%d %H:%M:%S"), "renewals": 0}


def holder(model_dir, job, watch=False):
  """The claim another job holds on `model_dir`, or None when it is free
  for `job`. A claim made on another host (or in another container's
  processes) is held only if it is renewed while watched (watch: rank 0
  watches; a launcher cannot tell)."""
  path = path_in(model_dir)
  held = json_files.read_json(path)
  if not isinstance(held, dict):
    return None
  if held.get("run") and held.get("run") == job["run"]:
    return None   # this job's earlier round: relaunched or requeued
  if (held.get("host"), held.get("place")) == (job["host"], job["place"]):
    alive = _alive(held.get("pid"), held.get("process_start"))
    return held if alive else None
  if not watch:
    return None
  return held if _renewed(path, WATCH_RENEWALS * RENEW_SECONDS) else None


def held_line(model_dir, held):
  """The one line for a model directory another job holds."""
  return ("--model_dir={}: in use by another job ({}, since {}); expected a "
          "model directory no other job trains in: wait for that job to end, "
          "or give another --model_dir".format(model_dir, _who(held),
                                               held.get("since")))


def in_use(model_dir, env=None):
  """The line naming the job on this host that holds `model_dir` against a
  job of this process's run (env: the launcher's, with its cli.ROUND), or
  None."""
  found = holder(model_dir, this_job(env))
  return held_line(model_dir, found) if found else None


def claim(model_dir, env=None):
  """Rank 0: claims `model_dir` for this job, kept until this process ends.
  cli.UserError naming the job that holds it instead, or if the claim
  cannot be written (a full disk, a quota)."""
  job = this_job(env)
  path = path_in(model_dir)
  with _locked(model_dir):
    found = holder(model_dir, job, watch=True)
    if found:
      raise cli.UserError(held_line(model_dir, found))
    _write(path, job)
  _held.append((os.getpid(), path, job))
  atexit.register(release)
  threading.Thread(target=_renew, args=(path, job), daemon=True,
                   name="model-dir-claim").start()


def release():
  """Removes this process's claim, if it still holds it; not a forked
  child's exit (a rank's helper processes inherit _held and atexit)."""
  with _renewing:
    while _held:
      pid, path, job = _held.pop()
      if pid == os.getpid() and _ours(json_files.read_json(path), job):
        with contextlib.suppress(OSError):
          os.remove(path)


def _write(path, job):
  try:
    json_files.write_text(path, json.dumps(job, sort_keys=True))
  except OSError as e:
    raise cli.UserError("--model_dir={}: its claim could not be written "
                        "({}); expected a directory with room for a small "
                        "file".format(os.path.dirname(path), e.strerror))


def _renew(path, job):
  while True:
    time.sleep(RENEW_SECONDS)
    with _renewing:
      if (os.getpid(), path, job) not in _held:
        return   # released
      found = json_files.read_json(path)
      if found is not None and not _ours(found, job):
        return _end_taken_over(path, found)
      job["renewals"] += 1
      with contextlib.suppress(cli.UserError):
        _write(path, job)


def _end_taken_over(path, found):
  """Judged gone by a job that watched the claim (this one stalled, or was
  suspended): that job trains here now, and two must not."""
  print(cli.error_line("--model_dir={}: taken over by another job ({}) "
                       "after this one did not renew its claim for {:.0f} "
                       "s; this job stops".format(
                           os.path.dirname(path), _who(found),
                           WATCH_RENEWALS * RENEW_SECONDS)),
        file=sys.stderr, flush=True)
  os._exit(cli.INPUT_ERROR)  # pylint: disable=protected-access


def _ours(found, job):
  return isinstance(found, dict) and all(
      found.get(key) == job[key] for key in _WHO)


def _who(held):
  who = "rank 0 on {}, pid {}".format(held.get("host"), held.get("pid"))
  if held.get("slurm_job"):
    who += ", Slurm job {}".format(held["slurm_job"])
  return who


def _renewed(path, seconds):
  """Whether the claim at `path` is renewed (or replaced) within `seconds`,
  read whole each time (opening a file refreshes an NFS client's view);
  False once it is removed (its job ended)."""
  first = _reads(path)
  deadline = time.monotonic() + seconds
  while time.monotonic() < deadline:
    time.sleep(seconds / 20)
    now = _reads(path)
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
  starting at once do not both take it (where the file system has flock
  on a directory: not NFS)."""
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


def _place():
  """This boot of this machine and this process's pid namespace: two
  containers that share a hostname have different pid namespaces."""
  try:
    with open("/proc/sys/kernel/random/boot_id") as f:
      boot = f.read().strip()
    return "{} {}".format(boot, os.readlink("/proc/self/ns/pid"))
  except OSError:
    return None


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
