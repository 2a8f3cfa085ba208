"""Finding, checking and restoring the trainers' checkpoints, with one-line
errors. Names are relative to the model directory, so it resumes wherever it
is moved; a state file naming them elsewhere (old TF1 jobs), unreadable or
missing is read as the directory's own files, said once. A checkpoint is
intact when every tensor reads (the bundle checks each CRC)."""
import collections
import glob
import os
import re

from absl import logging
import tensorflow.compat.v1 as tf

from legacy_hvd.checkpoints import state_proto
from legacy_hvd.common import checkpoint_state
from legacy_hvd.common import cli
from legacy_hvd.common import json_files

# What TF's checkpoint reader raises for a damaged, short or missing file on
# TF 1.15.5 to 2.21.0 (docs/faults.md): tf.errors.OpError, IndexError (TF 2's
# pybind reader on a data file shorter than its index says), ValueError
# (UnicodeDecodeError among them). Anything else is a bug of ours.
READ_ERRORS = (tf.errors.OpError, ValueError, IndexError)
# The checkpoints a model directory keeps (and its state file lists), as
# TF1's Saver keeps them by default: every trainer's.
KEPT = 5
_INDEX = re.compile(r"^(.+)-(\d+)\.index$")


def tf2_attribute(name):
  """'conv1/weights' -> its attribute name in a TF2 object checkpoint."""
  return name.replace("/", "_")


def tf2_key(name):
  """'conv1/weights' -> the key of its value in a TF2 object checkpoint."""
  return tf2_attribute(name) + "/.ATTRIBUTES/VARIABLE_VALUE"


def relative_saver():
  """The saver MonitoredTrainingSession would make, deferred to finalize,
  naming checkpoints relative to the model directory (as Estimator and
  CheckpointManager do)."""
  return tf.train.Saver(sharded=True, allow_empty=True, defer_build=True,
                        save_relative_paths=True)


# A model directory's checkpoints: `paths` those the state file lists (or,
# where it cannot say, the newest found on disk), oldest first; `older` the
# ones on disk with the same prefix that it no longer lists, oldest first;
# `note` what to say once about how they were found, or empty.
Listing = collections.namedtuple("Listing", "paths older note")


def listing(model_dir):
  """The Listing of `model_dir`'s checkpoints, each a path in model_dir."""
  state, problem = _read_state(model_dir)
  on_disk = _on_disk(model_dir)
  its_state = f"its '{checkpoint_state.STATE_FILE}' state file"
  if state is None and not on_disk:
    return Listing([], [], problem and (
        f"{its_state} is {problem} and no checkpoint is beside it; starting "
        "afresh"))
  if state is None:
    ours = [path for path in on_disk if _prefix(path) == _prefix(on_disk[-1])]
    return Listing(ours[-KEPT:], ours[:-KEPT], (
        f"{its_state} is {problem or 'missing'}; resuming from the "
        f"checkpoints beside it, the newest {os.path.basename(ours[-1])}"))
  names = list(state.all_model_checkpoint_paths)
  if state.model_checkpoint_path not in names:
    names.append(state.model_checkpoint_path)
  paths = [_own(model_dir, name) for name in names]
  older = [path for path in on_disk
           if path not in paths and _prefix(path) == _prefix(paths[-1])
           and checkpoint_state.step_of(path) < checkpoint_state.step_of(
               paths[-1])]
  elsewhere = sorted({os.path.dirname(name) for name in names
                      if os.path.isabs(name)
                      and not _same_dir(os.path.dirname(name), model_dir)})
  return Listing(paths, older, elsewhere and (
      f"{its_state} names checkpoints in {', '.join(elsewhere)} (the "
      "directory was moved or copied from there, or is mounted elsewhere); "
      "resuming from its own files here"))


def adopt(model_dir):
  """Rank 0, first: when listing() has a note, says it once and rewrites the
  state file from the directory's own files (or removes it)."""
  found = listing(model_dir)
  if not found.note:
    return
  logging.warning("--model_dir=%s: %s", model_dir, found.note)
  if found.paths:
    write_state(model_dir, found.paths)
  else:
    os.remove(os.path.join(model_dir, checkpoint_state.STATE_FILE))


def write_state(model_dir, paths):
  """The state file naming `paths` (oldest first; the last the newest),
  relative to model_dir, written atomically."""
  json_files.write_text(
      os.path.join(model_dir, checkpoint_state.STATE_FILE),
      state_proto.checkpoint_state_text(
          [os.path.relpath(path, model_dir) for path in paths]))


def prepare_resume(model_dir, expected_shapes):
  """Rank 0 of a trainer, before training: the checkpoint to resume from, or
  None. A damaged one is passed over (its files removed) for the newest intact
  one, in one line; one whose variables are not `expected_shapes` is another
  model's: cli.UserError, as when none is intact."""
  found = listing(model_dir)
  path, damaged = _newest_intact(found, expected_shapes, model_dir)
  if damaged:
    for bad, problem in damaged:
      removed = _remove_checkpoint(bad)
      logging.warning("Checkpoint %s in %s is damaged (%s); %sresuming "
                      "from %s", os.path.basename(bad), model_dir, problem,
                      "removed it, " if removed else "",
                      os.path.basename(path))
    write_state(model_dir, [p for p in found.paths if p not in dict(damaged)]
                if path in found.paths else [path])
  return path


def latest_or_fail(model_dir):
  """For evaluate and export: the newest intact checkpoint, found as a trainer
  resumes but writing nothing; one line when there is none."""
  found = listing(model_dir) if os.path.isdir(model_dir) else None
  if found is None or not found.paths:
    cli.fail(f"--model_dir={model_dir}: holds no checkpoint; expected a "
             "directory written by legacy_hvd.train")
  try:
    path, damaged = _newest_intact(found, None, model_dir)
  except cli.UserError as e:
    cli.fail(str(e))
  if cli.speaks_for_host():   # every rank reads it alike
    if found.note:
      logging.warning("--model_dir=%s: %s", model_dir,
                      found.note.replace("resuming from", "reading"))
    for bad, problem in damaged:
      logging.warning("Checkpoint %s in %s is damaged (%s); reading %s "
                      "instead", os.path.basename(bad), model_dir, problem,
                      os.path.basename(path))
  return path


def _newest_intact(found, expected_shapes, model_dir):
  """(the newest intact checkpoint or None, [(each newer damaged one, why)]);
  cli.UserError when there are checkpoints and none is intact."""
  damaged = []
  for path in reversed(found.older + found.paths):
    problem = _damage(path, expected_shapes, model_dir)
    if problem is None:
      return path, damaged
    damaged.append((path, problem))
  if damaged:
    raise cli.UserError(
        f"--model_dir={model_dir}: no intact checkpoint is left ("
        + "; ".join(f"{os.path.basename(bad)}: {problem}"
                    for bad, problem in damaged)
        + "); restore its files from a copy, or move the directory away "
        "to start afresh")
  return None, damaged


def restore_or_fail(session, variables, path):
  try:
    tf.train.Saver(variables).restore(session, path)
  except (tf.errors.NotFoundError, tf.errors.InvalidArgumentError,
          tf.errors.DataLossError, ValueError) as e:
    cli.fail(f"{path}: not a readable checkpoint of this model "
             f"({first_line(e)})")


def _damage(path, expected_shapes, model_dir):
  """None if `path` reads completely, else what is wrong with it."""
  try:
    reader = tf.train.load_checkpoint(path)
    shapes = reader.get_variable_to_shape_map()
    for name in shapes:
      reader.get_tensor(name)   # the bundle checks each one's CRC
  except READ_ERRORS as e:
    return first_line(e)
  for name, shape in (expected_shapes or {}).items():
    if name not in shapes or tuple(shapes[name]) != tuple(shape):
      found = (f"has {name} {list(shapes[name])}" if name in shapes
               else f"lacks {name}")
      raise cli.UserError(
          f"--model_dir={model_dir}: {os.path.basename(path)} is a checkpoint "
          f"of a different model ({found}, expected {list(shape)}); use a "
          "new --model_dir")
  return None


def _read_state(model_dir):
  """(the state file's CheckpointState, None); (None, what is wrong with
  it); or (None, None) when there is none."""
  path = os.path.join(model_dir, checkpoint_state.STATE_FILE)
  try:
    with open(path, "rb") as f:
      raw = f.read()
  except FileNotFoundError:
    return None, None
  except OSError as e:
    return None, f"unreadable ({e.strerror})"
  if not raw.strip():
    return None, "empty"
  try:
    state = state_proto.parse_checkpoint_state(raw.decode("utf-8"))
  except (UnicodeDecodeError, state_proto.CheckpointStateError) as e:
    return None, f"unparseable ({first_line(e)})"
  if not state.model_checkpoint_path:
    return None, "naming no checkpoint"
  return state, None


def _on_disk(model_dir):
  """The checkpoints in model_dir by their index files, oldest first (by
  step, then by when they were written)."""
  found = []
  for name in os.listdir(model_dir):
    match = _INDEX.match(name)
    if match:
      path = os.path.join(model_dir, name)
      try:
        found.append((int(match.group(2)), os.path.getmtime(path),
                      path[:-len(".index")]))
      except OSError:
        continue
  return [path for _, _, path in sorted(found)]


def _own(model_dir, name):
  """A name from the state file as this directory's file."""
  return os.path.join(model_dir, os.path.basename(name) if os.path.isabs(name)
                      else name)


def _same_dir(a, b):
  if os.path.normpath(a) == os.path.normpath(b):
    return True
  try:
    return os.path.samefile(a, b)
  except OSError:
    return False


def _prefix(path):
  return path.rsplit("-", 1)[0]


def _remove_checkpoint(path):
  """Removes the files of checkpoint `path` (a prefix); whether it had any."""
  names = glob.glob(glob.escape(path) + ".*")
  for name in names:
    os.remove(name)
  return bool(names)


def first_line(error):
  """The first line of an error's message (TensorFlow's run on)."""
  lines = getattr(error, "message", str(error)).strip().splitlines()
  return lines[0] if lines else type(error).__name__
