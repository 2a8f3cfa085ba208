"""JSON files written whole: a reader finds the complete new file or the old.

A file is written under `<path>.tmp-<pid>` beside it (the same file system,
so the rename is atomic), then renamed over it; a failed write removes its
temporary file when it can and raises the OSError, naming `path` when the
error names no file. Standard library only: the launchers import it where
TensorFlow may be absent; Python 3.7-compatible.
"""
import contextlib
import json
import os
import re

TEMPORARY = re.compile(r"\.tmp-\d+$")


def write_json(path, value):
  """`value` as indented, key-sorted JSON, written atomically; returns `path`.
  """
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
