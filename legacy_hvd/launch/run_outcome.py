"""How one run of a trainer (a horovodrun, or an srun step) ended, read from
what its ranks wrote: horovodrun's exit code can read 0 after a stopped rank,
so a run trained if rank 0 wrote results.json during it; else the first
surviving rank's line names a lost host (a relaunch may succeed) or a rank's
own error (a relaunch would meet it again). No Horovod, no TensorFlow;
Python 3.7-compatible."""
import os
import re
import subprocess
import sys
import threading

from legacy_hvd.common import cli
from legacy_hvd.common import json_files

TRAINED, LOST, FAILED, OTHER = "trained", "lost", "failed", "other"
RESULTS_FILE = "results.json"   # rank 0's, at the end of a run (results.py)
# The survivors' lines (job_faults.report_lost_peers), after horovodrun's
# "[rank]<stderr>:" and the trainer's "program: [error: ][on host: ]": an
# error line under horovodrun alone, a report under a launcher that decides.
_LOST = re.compile(r": (?:error: )?(?:on \S+: )?lost (.*?); (?:the job|this "
                   r"run) stops\.")
_FAILED = re.compile(r": (?:error: )?(?:on \S+: )?(.*?) \(see its error\); "
                     r"(?:the job|this run) stops\.")
# Items of the lost line (roster.Roster.describe), "; "-separated.
_WHOLE_HOST = re.compile(r"^host (\S+) \(ranks? [\d, ]+: (.*)\)$")
_PART_OF_HOST = re.compile(r"^ranks? [\d, ]+ of \d+ on host (\S+) \((.*)\)$")
# A rank lost this way has its host left out too, as Elastic Horovod
# blacklists a failed worker's host; one whose process merely ended died of
# the loss: its host keeps its slots.
_HOST_SUSPECT = ("not answering", "host unreachable")
# A launcher's tag before a rank's line: horovodrun's "[1]<stderr>:", srun
# --label's "1: ".
_RANK_TAG = re.compile(r"^(?:\[\d+\]<std(?:out|err)>:|\d+: )")
RELAY_SECONDS = 10   # for the output's last lines once the launcher ended


def run_reading(argv, started=None, **popen_kwargs):
  """Runs `argv` to its end, its output passed through and every line read;
  (its exit code, the Lines). started(process) is called once it runs."""
  lines = Lines()
  process = subprocess.Popen(argv, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, **popen_kwargs)
  if started is not None:
    started(process)
  relays = [threading.Thread(target=_relay, args=(stream, to, lines),
                             daemon=True)
            for stream, to in ((process.stdout, sys.stdout),
                               (process.stderr, sys.stderr))]
  for relay in relays:
    relay.start()
  code = process.wait()
  for relay in relays:
    # A rank the launcher could not end would hold the pipe open forever.
    relay.join(RELAY_SECONDS)
  return code, lines


def _relay(stream, to, lines):
  for raw in iter(stream.readline, b""):
    text = raw.decode("utf-8", "replace")
    lines.add(text)
    to.write(text)
    to.flush()


class Outcome(object):

  def __init__(self, kind, code, line=None, what=None, dropped=None):
    self.kind = kind
    self.code = code          # horovodrun's exit code
    self.line = line          # the ranks' line, without horovodrun's prefix
    self.what = what          # the lost line's "host lh2 (rank 1: ...)"
    self.dropped = dropped or {}


class Lines(object):
  """The lost and failed lines among everything a run printed."""

  def __init__(self):
    self.lost = []     # [(line, describe)]
    self.failed = []

  def add(self, text):
    match = _LOST.search(text)
    if match:
      self.lost.append((_without_prefix(text), match.group(1)))
    elif _FAILED.search(text):
      self.failed.append(_without_prefix(text))

  def outcome(self, code, model_dir, mark):
    """The run's Outcome. `mark`: results_mark() before it started."""
    if results_written(model_dir, mark):
      return Outcome(TRAINED, code)
    if self.lost:
      dropped = {}
      for _, describe in self.lost:
        dropped.update(lost_hosts(describe))
      # (None dropped: a rank died alone; the relaunch uses the same hosts.)
      line, what = self.lost[0]
      return Outcome(LOST, code, line, what, dropped)
    if self.failed:
      return Outcome(FAILED, code, self.failed[0])
    if code == 0 and not os.path.isdir(model_dir):
      # Rank 0's model directory is not visible here (another host's
      # disk): a clean exit is all there is to judge by.
      return Outcome(TRAINED, code)
    return Outcome(OTHER, code)


def lost_hosts(describe):
  """{host: why} of the hosts a relaunch leaves out, from the lost line."""
  dropped = {}
  for item in describe.split("; "):
    whole = _WHOLE_HOST.match(item)
    part = _PART_OF_HOST.match(item)
    if whole:
      dropped[whole.group(1)] = whole.group(2)
    elif part and any(word in part.group(2) for word in _HOST_SUSPECT):
      dropped[part.group(1)] = item
  return dropped


def _without_prefix(text):
  """The trainer's line without its launcher's rank tag."""
  return _RANK_TAG.sub("", text.rstrip("\n"))


def results_mark(model_dir):
  """What results.json is before a launch: its modification time, or None."""
  try:
    return os.stat(os.path.join(model_dir, RESULTS_FILE)).st_mtime_ns
  except OSError:
    return None


def results_written(model_dir, mark):
  """Whether rank 0 wrote results.json since results_mark() gave `mark`."""
  now = results_mark(model_dir)
  return now is not None and now != mark


def record_restarts(model_dir, restarts):
  """Adds "restarts" (one dict per restart) to results.json atomically; the
  path written, or None when results.json is not visible here."""
  path = os.path.join(model_dir, RESULTS_FILE)
  results = json_files.read_json(path)
  if results is None:
    return None
  results["restarts"] = restarts
  try:
    json_files.write_json(path, results)
  except OSError as e:
    cli.fail("{}: cannot record the restarts: {}".format(path, e.strerror))
  return path
