"""Damaged CIFAR-10 is named in one line by the reader (the whole job
stopping on it: tests/jobs/test_bad_data.py)."""
import pytest

from legacy_hvd.data import cifar10
from tests.helpers.cifar10_layouts import (corrupt_archive, label_out_of_range,
                                           missing_file, nonexistent_path,
                                           pickle_with_code,
                                           pickle_without_keys, truncated_file)

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
