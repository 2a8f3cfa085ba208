"""tools/preemption_compare.py's own logic, without a run: its arguments,
the step log it reads, and the report's arithmetic by hand."""
import json

import numpy as np
import pytest

from tools import preemption_compare as pc

# The tool measures MultiWorkerMirroredStrategy's pre-emption: TF 2 only.
pytestmark = pytest.mark.one_stack


def test_arguments_name_the_bad_one(tmp_path, capsys):
  args = pc.parse_args(["--out", str(tmp_path / "new")])
  assert (args.steps, args.stop_at, args.warmup, args.timed_steps,
          args.repeats, args.parts) == (200, 100, 40, 200, 3, ["stop", "cost"])
  for argv, named in ((["--steps", "50", "--stop_at", "48"], "--stop_at=48"),
                      (["--repeats", "0"], "--repeats"),
                      (["--parts", "stop,speed"], "--parts=stop,speed"),
                      ([], "--out")):
    out = [] if named == "--out" else ["--out", str(tmp_path / "new")]
    with pytest.raises(SystemExit):
      pc.parse_args(out + argv)
    assert named in capsys.readouterr().err
  (tmp_path / "full").mkdir()
  (tmp_path / "full" / "report.md").write_text("")
  with pytest.raises(SystemExit):
    pc.parse_args(["--out", str(tmp_path / "full")])
  assert "not empty" in capsys.readouterr().err


def test_the_worker_command_parses_alone():
  args = pc.parse_args(["worker", "--model_dir=M", "--step_log=S",
                        "--max_steps=7", "--handler"])
  assert (args.command, args.max_steps, args.handler) == ("worker", 7, True)
  assert pc.parse_args(["worker", "--model_dir=M", "--step_log=S",
                        "--max_steps=7"]).handler is False


def test_a_partly_written_line_and_evaluations_are_left_out(tmp_path):
  log = tmp_path / "steps.jsonl"
  assert pc.last_logged_step(str(log)) == 0   # not written yet
  log.write_text(json.dumps({"step": 1, "time": 10.0}) + "\n" +
                 json.dumps({"step": 1, "time": 11.0, "test_loss": 2.0}) +
                 "\n" + json.dumps({"step": 2, "time": 10.5}) + "\n" +
                 '{"step": 3, "ti')
  assert pc.logged(str(log)) == {1: 10.0, 2: 10.5}
  assert pc.last_logged_step(str(log)) == 2


def test_step_seconds_and_spread_by_hand():
  times = {0: 0.0, 1: 1.0, 2: 1.5, 3: 1.75, 4: 2.75}
  # Steps 2..4 took 0.5, 0.25, 1.0 s: the median 0.5.
  assert pc.median_step_seconds(times, 1, 4) == 0.5
  assert pc.spread([0.9, 1.0, 1.2]) == pytest.approx(0.3)


def test_largest_difference_is_zero_only_for_equal_bits():
  state = {"a": np.array([1.0, 2.0], np.float32), "b": np.int64(5)}
  assert pc.largest_difference(state, dict(state)) == 0.0
  nudged = dict(state, a=np.array([1.0, np.nextafter(np.float32(2),
                                                     np.float32(3))]))
  assert pc.largest_difference(state, nudged) == pytest.approx(2.4e-7,
                                                               rel=0.01)
  assert pc.largest_difference(state, {"a": state["a"]}) is None
