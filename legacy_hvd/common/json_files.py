"""JSON files written whole: a reader finds the complete new file or the old.

Written to `<path>.tmp-<pid>` beside it (one file system: an atomic rename);
a failed write removes that file and raises the OSError, naming `path`.
Standard library only (the launchers may lack TensorFlow); Python 3.7."""
import contextlib
import json
import os
import re

TEMPORARY = re.compile(r"\.tmp-\d+$")


def write_json(path, value):
  """`value` as indented, sorted JSON, written atomically; returns `path`."""
  return write_text(path, json.dumps(value, indent=2, sort_keys=True) + "\n")


def write_text(path, text):
  """Writes `text` to `path` atomically; returns `path`."""
  tmp = "{}.tmp-{}".format(path, os.getpid())
  try:
    with open(tmp, "w") as f:
      f.write(text)
    os.replace(tmp, path)
  except OSError as e:
    with contextlib.suppress(OSError):
      os.remove(tmp)
    e.filename = e.filename or path   # a write's error names no file
    raise
  return path


def read_json(path):
  """The value in `path`, or None when it is absent, unreadable or not JSON."""
  try:
    with open(path) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None
