"""Damaged CIFAR-10 stops the whole horovodrun job in one line, quickly."""
import os
import pickle

import numpy as np
import pytest

from legacy_hvd.data import cifar10
from tests import layouts
from tests.helpers import error_lines, horovodrun

DEADLINE_SECONDS = 60   # generous: a loaded 2-core machine starts TF slowly


def tiny_data(n=20):
  rng = np.random.RandomState(0)
  return cifar10.Cifar10(rng.randint(0, 256, (n, 32, 32, 3)).astype(np.uint8),
                         np.arange(n, dtype=np.int32) % 10,
                         rng.randint(0, 256, (n, 32, 32, 3)).astype(np.uint8),
                         np.arange(n, dtype=np.int32) % 10, "tiny")


def missing_file(root):
  layout = layouts.write_bin_layout(root, tiny_data())
  os.remove(os.path.join(layout, "data_batch_3.bin"))
  return layout, "data_batch_3.bin: missing"


def truncated_file(root):
  layout = layouts.write_bin_layout(root, tiny_data())
  path = os.path.join(layout, "data_batch_2.bin")
  with open(path, "r+b") as f:
    f.truncate(os.path.getsize(path) - 100)
  return layout, "not a whole number of 3073-byte records"


def label_out_of_range(root):
  layout = layouts.write_bin_layout(root, tiny_data())
  path = os.path.join(layout, "test_batch.bin")
  with open(path, "r+b") as f:
    f.seek(3073 * 2)     # the third record's label byte
    f.write(bytes([12]))
  return layout, "test_batch.bin: record 2 has label 12; expected 0..9"


def pickle_without_keys(root):
  layout = layouts.write_py_layout(root, tiny_data())
  with open(os.path.join(layout, "data_batch_1"), "wb") as f:
    pickle.dump({b"pixels": np.zeros((4, 3072), np.uint8)}, f)
  return layout, "data_batch_1: pickle lacks the keys b'data' and b'labels'"


def corrupt_archive(root):
  layout = layouts.write_bin_layout(os.path.join(root, "src"), tiny_data())
  path = layouts.archive(layout, os.path.join(root, "cifar-10-binary.tar.gz"))
  with open(path, "r+b") as f:
    f.seek(os.path.getsize(path) // 2)
    f.write(b"\0" * 64)
  return path, "not a readable .tar.gz archive"


def nonexistent_path(root):
  return os.path.join(root, "nowhere"), "no such file or directory"


def pickle_with_code(root):
  layout = layouts.write_py_layout(root, tiny_data())
  with open(os.path.join(layout, "test_batch"), "wb") as f:
    pickle.dump(os.system, f)   # a pickle that would call a function
  return layout, "refusing to load"


DAMAGES = [missing_file, truncated_file, label_out_of_range,
           pickle_without_keys, corrupt_archive, nonexistent_path,
           pickle_with_code]


@pytest.mark.parametrize("damage", DAMAGES)
def test_damaged_data_is_named_in_one_line(tmp_path, damage):
  data_dir, expected = damage(str(tmp_path / "data"))
  with pytest.raises(cifar10.DataError) as raised:
    cifar10.load(data_dir)
  lines = str(raised.value).splitlines()
  assert len(lines) == 1 and expected in lines[0]
  assert "--data_dir" not in expected


def test_damaged_data_fails_every_rank_in_one_line(tmp_path):
  # Every rank loads the data before hvd.init() (startup.before_horovod)
  # and ends on the DataError there, whatever the damage: one shows the job.
  data_dir, expected = label_out_of_range(str(tmp_path / "data"))
  model_dir = tmp_path / "model"
  process = horovodrun(2, "legacy_hvd.train",
                       [f"--data_dir={data_dir}", f"--model_dir={model_dir}",
                        "--max_steps=2"], timeout=DEADLINE_SECONDS)
  output = process.stdout + process.stderr
  assert process.returncode != 0
  errors = error_lines(output)
  assert len(errors) == 1, output
  assert expected in errors[0]
  assert "]<stderr>:Traceback" not in output
  assert not model_dir.exists()
