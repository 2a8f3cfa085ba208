"""What disks, copies, moves and interrupted saves do to a model directory,
done to a copy of a real one.

    for kind in KINDS:                 # "data cut to half", ...
      expected = kind.apply(model_dir, newest, before)
      # expected: the step resumed from (newest or before's), or NONE_INTACT

`newest` and `before` are the paths (prefixes) of the directory's two
newest checkpoints, as its state file lists them; the damage is always to
the newest unless the kind says otherwise.
"""
import collections
import glob
import hashlib
import os
import random

from legacy_hvd.common import checkpoint_state

NONE_INTACT = "none intact"
# A kind of damage: its name, and apply(model_dir, newest, before) -> the
# checkpoint (prefix) the job must resume from, or NONE_INTACT.
Kind = collections.namedtuple("Kind", "name apply")


def data_file(prefix):
  return glob.glob(glob.escape(prefix) + ".data-*")[0]


def _cut(path, size):
  with open(path, "r+b") as f:
    f.truncate(size)


def _random_bytes(count, seed):
  generator = random.Random(seed)
  return bytes(generator.getrandbits(8) for _ in range(count))


def _replace(path, content):
  with open(path, "wb") as f:
    f.write(content)


def _state(model_dir):
  return os.path.join(model_dir, checkpoint_state.STATE_FILE)


def _data_cut_to_half(model_dir, newest, before):
  _cut(data_file(newest), os.path.getsize(data_file(newest)) // 2)
  return before


def _data_emptied(model_dir, newest, before):
  _cut(data_file(newest), 0)
  return before


def _data_replaced(model_dir, newest, before):
  _replace(data_file(newest), _random_bytes(100, seed=7))
  return before


def _data_overwritten(model_dir, newest, before):
  path = data_file(newest)
  with open(path, "r+b") as f:
    f.seek(os.path.getsize(path) // 2)
    f.write(b"\xff" * 64)
  return before


def _data_missing(model_dir, newest, before):
  os.remove(data_file(newest))
  return before


def _index_cut_to_half(model_dir, newest, before):
  _cut(newest + ".index", os.path.getsize(newest + ".index") // 2)
  return before


def _index_emptied(model_dir, newest, before):
  _cut(newest + ".index", 0)
  return before


def _index_missing(model_dir, newest, before):
  os.remove(newest + ".index")
  return before


def _pair_of_two(model_dir, newest, before):
  """The index of the checkpoint before beside the newest's data."""
  with open(before + ".index", "rb") as f:
    _replace(newest + ".index", f.read())
  return before


def _state_names_a_gone_one(model_dir, newest, before):
  gone = f"{newest.rsplit('-', 1)[0]}-{checkpoint_state.step_of(newest) + 7}"
  with open(_state(model_dir)) as f:
    listed = [line for line in f if line.startswith("all_model")]
  _replace(_state(model_dir), "".join(
      [f'model_checkpoint_path: "{os.path.basename(gone)}"\n', *listed,
       f'all_model_checkpoint_paths: "{os.path.basename(gone)}"\n']).encode())
  return newest


def _state_emptied(model_dir, newest, before):
  _cut(_state(model_dir), 0)
  return newest


def _state_unparseable(model_dir, newest, before):
  _replace(_state(model_dir), b'model_checkpoint_path: "ckpt-1\n{{{ not text')
  return newest


def _state_binary(model_dir, newest, before):
  _replace(_state(model_dir), _random_bytes(64, seed=8))
  return newest


def _interrupted_save(model_dir, newest, before):
  """What a save killed part-way leaves: the Saver's staging directory with
  a partial shard, the next checkpoint's data but no index, and a state
  file being written."""
  nxt = f"{newest.rsplit('-', 1)[0]}-{checkpoint_state.step_of(newest) + 10}"
  staging = f"{nxt}_temp_{'0123abcd' * 4}"
  os.mkdir(staging)
  with open(data_file(newest), "rb") as f:
    half = f.read()[:os.path.getsize(data_file(newest)) // 2]
  _replace(os.path.join(staging, "part-00000-of-00001.data-00000-of-00001"),
           half)
  _replace(nxt + ".data-00000-of-00001", half)
  _replace(_state(model_dir) + ".tmp" + "5a" * 16, b"model_checkpoint_")
  return newest


def _every_one_damaged(model_dir, newest, before):
  for index in glob.glob(os.path.join(glob.escape(model_dir), "*.index")):
    _cut(index, os.path.getsize(index) // 2)
  return NONE_INTACT


KINDS = [Kind(name, apply) for name, apply in [
    ("data cut to half", _data_cut_to_half),
    ("data emptied", _data_emptied),
    ("data replaced by 100 bytes", _data_replaced),
    ("data overwritten in the middle", _data_overwritten),
    ("data missing", _data_missing),
    ("index cut to half", _index_cut_to_half),
    ("index emptied", _index_emptied),
    ("index missing", _index_missing),
    ("index of the one before", _pair_of_two),
    ("state names a gone checkpoint", _state_names_a_gone_one),
    ("state emptied", _state_emptied),
    ("state unparseable", _state_unparseable),
    ("state not text", _state_binary),
    ("an interrupted save's files", _interrupted_save),
    ("every checkpoint damaged", _every_one_damaged),
]]


def names_elsewhere(model_dir, elsewhere):
  """The state file rewritten to name its checkpoints by absolute paths in
  `elsewhere`, as the TF1 jobs wrote it before they named them relative:
  the directory as it is after a move or a copy from there."""
  with open(_state(model_dir)) as f:
    lines = f.read().splitlines()
  _replace(_state(model_dir), "".join(
      line.replace(': "', f': "{elsewhere}/') + "\n" for line in lines
      if line.startswith(("model_checkpoint_path", "all_model_checkpoint_paths"))
  ).encode())


def digests(model_dir):
  """{name: sha256} of every file in model_dir, recursively."""
  found = {}
  for root, _, names in os.walk(model_dir):
    for name in names:
      path = os.path.join(root, name)
      with open(path, "rb") as f:
        found[os.path.relpath(path, model_dir)] = hashlib.sha256(
            f.read()).hexdigest()
  return found


def files_of(prefix):
  """The file names of checkpoint `prefix` (its index, data, meta)."""
  return {os.path.basename(path) for path in glob.glob(glob.escape(prefix)
                                                       + ".*")}
