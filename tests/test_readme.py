"""README stays true: its code references and flag table match the code."""
import os
import re

from absl import flags
import pytest

from flags import define_trainer_flags
from tests.helpers import REPO

README = open(os.path.join(REPO, "README.md")).read()


def test_main_job_command_is_shown():
  assert "horovodrun -np 4 python -m legacy_hvd.train --batch_size=64" in README
  assert "make test" in README and "make train" in README


def test_horovod_touch_points_point_at_horovod_lines():
  references = re.findall(r"`(legacy_hvd/[\w/]+\.py):(\d+)`", README)
  assert len(references) >= 8
  for path, line in references:
    with open(os.path.join(REPO, path)) as f:
      text = f.read().splitlines()[int(line) - 1]
    assert "Horovod:" in text, f"{path}:{line} is now: {text.strip()}"


def all_flags():
  flag_values = flags.FlagValues()
  define_trainer_flags(flag_values)
  return flag_values


@pytest.mark.parametrize("name", sorted(all_flags()))
def test_every_flag_is_documented_with_its_default(name):
  row = re.search(rf"^\| `--{name}` \| ([^|]+) \|", README, re.MULTILINE)
  assert row, f"--{name} missing from the README flag table"
  assert row.group(1).strip() == str(all_flags()[name].default)
