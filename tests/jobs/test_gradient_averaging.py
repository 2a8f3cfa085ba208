"""Collectives over two real ranks: gradient averaging and the broadcast hook."""
import json

from tests.helpers import assert_ok, horovodrun


def test_two_ranks_apply_the_mean_gradient(tmp_path):
  assert_ok(horovodrun(2, "tests.helpers.workers.average_gradients",
                       [str(tmp_path)], timeout=120))
  x = [1.0, 2.0, 4.0]
  mean_scale = (1 + 2) / 2          # ranks 0 and 1 scale their loss by 1 and 2
  for rank in range(2):
    written = json.loads((tmp_path / f"rank-{rank}.json").read_text())
    assert written["size"] == 2
    # Powers of two and 1.5: the expected values are exact in float32.
    assert written["w"] == [-mean_scale * v for v in x]


def test_project_broadcast_hook_makes_rank0_values_win(tmp_path):
  assert_ok(horovodrun(2, "tests.helpers.workers.broadcast_hook",
                       [str(tmp_path)], timeout=120))
  for rank in range(2):
    written = json.loads((tmp_path / f"rank-{rank}.json").read_text())
    assert written["v"] == [7.0, 7.0, 7.0]
