"""Damaged CIFAR-10 stops the whole horovodrun job in one line, quickly."""
import pytest

from tests.helpers import error_lines, horovodrun
from tests.helpers.cifar10_layouts import label_out_of_range

DEADLINE_SECONDS = 60   # generous: a loaded 2-core machine starts TF slowly


# One stack: the data is read with numpy (legacy_hvd/data/cifar10.py) and the
# ranks end in the project's cli before hvd.init(); the TF 1.15 suite reads
# every damage in this process (tests/unit/test_bad_data.py).
@pytest.mark.one_stack
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
