"""JSON files written whole: a reader finds the complete new file or the old.

    json_files.write_json(path, value)   # atomic; returns path
    json_files.write_text(path, text)    # the same for any text
    json_files.read_json(path)           # its value, or None
    json_files.TEMPORARY.search(name)    # a name write_json writes under first

Rank 0's results.json, world.json and evaluate's --results_file, and the
supervisor's rewrite of results.json (its restarts) are all written here:
under a temporary name beside the file (`<path>.tmp-<pid>`, on the same file
system, so the rename is atomic), then renamed over it. A failed write
removes its temporary file when it can (failed_writes.py removes what is
left on a file system that no longer takes changes) and raises the OSError,
naming `path` when the error names no file. Standard library only: the
launchers import it where TensorFlow may be absent; Python 3.7-compatible.
"""
import contextlib
import json
import os
import re

TEMPORARY = re.compile(r"\.tmp-\d+$")


def write_json(path, value):
  """Writes `value` to `path` as indented JSON with sorted keys and a final
  newline, atomically; returns `path`."""
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
  """The value in the JSON file `path`, or None when it is absent,
  unreadable or not JSON (write_json never leaves one half-written)."""
  try:
    with open(path) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None
