"""A write that fails in the model directory: one line, nothing half-written.

The rank ends in one line naming the file, the cause and the last complete
checkpoint (TF's savers name one in the state file only once complete); what
the write left is removed, now or by the next start. `tell_others()` lets the
other ranks name this one instead of waiting in a collective. Standard
library only; Python 3.7-compatible."""
import contextlib
import errno
import os
import re
import shutil
import sys
import threading

from absl import logging

from legacy_hvd.common import checkpoint_state
from legacy_hvd.common import cli
from legacy_hvd.common import json_files
from legacy_hvd.common import model_dir_claim

# What a failed write's errno says to do before running the same command.
ADVICE = {
    errno.ENOSPC: "free space on it",
    errno.EDQUOT: "free space or raise the quota",
    errno.EROFS: "make its file system writable again",
    errno.ENOENT: "the directory was removed: recreate it or move the job "
                  "to another --model_dir",
    errno.EACCES: "make it writable for this user",
    errno.EPERM: "make it writable for this user",
    errno.EIO: "check the disk or the network file system",
}
# TensorFlow's errors carry the C library's text, not the number.
_BY_TEXT = {os.strerror(number): number for number in ADVICE}
_PATH = re.compile(r"(?:^|[\s'\"(=])(/[^\s;:,'\"()]+)")
# Names a failed or interrupted write leaves, each with what to strip to
# get the name of what was being written.
_STAGING = [
    re.compile(r"(?<=\d)_temp(_[0-9a-f]+)?(/.*)?$"),   # a Saver's staging
    re.compile(r"\.tempstate\d+$"),             # a bundle's file being written
    re.compile(r"\.tmp[0-9a-f]{32}$"),          # TensorFlow's atomic writes
    json_files.TEMPORARY,                       # json_files.write_json's
]
_NO_PARENT = re.compile(r"Parent directory of (\S+) doesn't exist")
_CHECKPOINT_FILE = re.compile(
    r"^.+-(\d+)\.(index|meta|data-\d{5}-of-\d{5})$")


def cause(error):
  """(path or None, errno) when `error` (an OSError, or a TensorFlow error with
  the C library's text) is a failed write, else None."""
  if isinstance(error, OSError) and error.errno in ADVICE:
    return error.filename, error.errno
  message = str(getattr(error, "message", error))
  gone = _NO_PARENT.search(message)
  if gone:   # tf.train.Saver's own words for a removed directory
    return gone.group(1), errno.ENOENT
  for line in message.splitlines():   # TF 2 puts the op's stack first
    for text, number in _BY_TEXT.items():
      if text in line:
        found = _PATH.search(line)
        return (found.group(1) if found else None), number
  return None


def written_name(path):
  """'/m/model.ckpt-40_temp/part-0.data.tempstate7' -> '/m/model.ckpt-40'."""
  for pattern in _STAGING:
    path = pattern.sub("", path)
  return path


def describe(path, number, model_dir=None, removed=(), left=()):
  """The one line: file and cause, the last complete checkpoint in `model_dir`
  (None: a job that writes none), what was removed or is left, what to do."""
  name = errno.errorcode.get(number, str(number))
  line = f"{path or model_dir}: {os.strerror(number).lower()} ({name})"
  if model_dir is None:
    return f"{line}; {ADVICE[number]}, then run the same command"
  step = checkpoint_state.latest_step(model_dir)
  if not os.path.isdir(model_dir):
    saved = f"{model_dir} is gone, with its checkpoints"
  elif step:
    saved = (f"the last complete checkpoint is step {step}, named in "
             f"{os.path.join(model_dir, checkpoint_state.STATE_FILE)}")
  else:
    saved = "no checkpoint was saved"
  if removed:
    saved += f"; removed the partial {', '.join(removed)}"
  if left:
    saved += f"; left the partial {', '.join(left)} (the next start removes it)"
  return (f"{line}; the job stops; {saved}; {ADVICE[number]}, then run the "
          "same command to resume")


def partial_files(model_dir):
  """Names a failed or interrupted write left in `model_dir`: staging names,
  and checkpoint files newer than the state file's newest (never named: their
  save did not complete)."""
  try:
    names = sorted(os.listdir(model_dir))
  except OSError:
    return []
  newest = checkpoint_state.latest_step(model_dir)
  has_state = checkpoint_state.STATE_FILE in names
  partial = []
  for name in names:
    staged = any(pattern.search(name) for pattern in _STAGING)
    checkpoint = _CHECKPOINT_FILE.match(name)
    unnamed = (has_state and checkpoint is not None
               and int(checkpoint.group(1)) > newest)
    if staged or unnamed:
      partial.append(name)
  return partial


def remove_partial_files(model_dir):
  """Removes partial_files(model_dir); (removed, left) lists of names."""
  removed, left = [], []
  for name in partial_files(model_dir):
    path = os.path.join(model_dir, name)
    try:
      if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
      else:
        os.remove(path)
      removed.append(name)
    except OSError:
      left.append(name)
  return removed, left


def log_removed_at_start(model_dir):
  """Rank 0, before training: removes what an earlier failed write left."""
  removed, left = remove_partial_files(model_dir)
  if removed:
    logging.warning("Removed what an interrupted write left in %s: %s",
                    model_dir, ", ".join(removed))
  if left:
    raise cli.UserError(f"--model_dir={model_dir}: cannot remove the "
                        f"partial {', '.join(left)}; expected a writable "
                        "directory")


def end(error, model_dir, tell_others, target=None):
  """If `error` is a failed write: removes what it left, prints the one line
  (naming `target`, else the error's file), tells the others, exits 1."""
  found = cause(error)
  if found is None:
    return
  path, number = found
  path = target or (written_name(path) if path else None)
  removed, left = (remove_partial_files(model_dir) if model_dir
                   else ([], []))
  if path and path.endswith(".meta"):
    # tf.train.Saver writes a checkpoint's graph after naming it: the
    # checkpoint restores without it, a half-written one is only in the way.
    with contextlib.suppress(OSError):
      os.remove(path)
      removed.append(os.path.basename(path))
  cli.mark_exiting()
  print(cli.error_line(describe(path, number, model_dir, removed, left)),
        file=sys.stderr, flush=True)
  tell_others()
  logging.flush()
  sys.stdout.flush()
  sys.stderr.flush()
  model_dir_claim.release()   # os._exit skips atexit's
  # At once: Horovod's shutdown at exit would wait on ranks that wait on
  # this one; they learn of it from tell_others, or when it has ended.
  os._exit(cli.INPUT_ERROR)  # pylint: disable=protected-access


@contextlib.contextmanager
def end_on_failure(model_dir, tell_others=lambda: None, target=None):
  """end() when a write fails in the block, or meanwhile in a TensorFlow thread
  (a summary writer's). model_dir None: a program that writes no
  checkpoints."""
  hook = getattr(threading, "excepthook", None)   # Python >= 3.8

  def thread_failed(args):
    end(args.exc_value, model_dir, tell_others, target)
    hook(args)

  if hook is not None:
    threading.excepthook = thread_failed
  try:
    yield
  except Exception as e:   # pylint: disable=broad-except
    end(e, model_dir, tell_others, target)
    raise
  finally:
    if hook is not None:
      threading.excepthook = hook
