"""legacy_hvd.common.progress: the progress line every n steps, with the epoch, the
rate and the ETA computed from a clock the test moves; and the step log.

Steps take 0.5 s each on the test's clock, from t = 100 s.
"""
import json
import logging
import time

import pytest

from legacy_hvd.common import progress


@pytest.fixture
def clock(monkeypatch):
  """A clock at 100 s; clock.now = t moves it."""
  class Clock:
    now = 100.0
  monkeypatch.setattr(time, "perf_counter", lambda: Clock.now)
  return Clock


@pytest.fixture
def logged(caplog):
  """The messages logged so far (absl logs through Python's logging)."""
  caplog.set_level(logging.INFO)
  return lambda: [record.getMessage() for record in caplog.records]


def run_steps(tracker, clock, first, last, loss=0.25):
  """Steps first..last, each 0.5 s after the one before; their rates."""
  rates = {}
  for step in range(first, last + 1):
    clock.now += 0.5
    rates[step] = tracker.record(step, {"loss": loss, "accuracy": 0.5})
  return rates


def test_a_line_every_n_steps_with_epoch_rate_and_eta(clock, logged):
  # 10 steps of 256 images in 5 s: 512 images/sec; 20 steps left at 0.5 s.
  tracker = progress.Progress(every_n_steps=10, global_batch=256,
                              steps_per_epoch=4, last_step=30)
  tracker.start(0)
  rates = run_steps(tracker, clock, 1, 30)
  assert {step: rate for step, rate in rates.items() if rate} == {
      10: 512.0, 20: 512.0, 30: 512.0}
  assert logged() == [
      "step 10: epoch 2.50, loss 0.25, accuracy 0.5, 512 images/sec, ETA 10s",
      "step 20: epoch 5.00, loss 0.25, accuracy 0.5, 512 images/sec, ETA 5s",
      "step 30: epoch 7.50, loss 0.25, accuracy 0.5, 512 images/sec, ETA 0s"]
  assert (tracker.start_step, tracker.last_step) == (0, 30)
  assert tracker.last_values == {"loss": 0.25, "accuracy": 0.5}


@pytest.mark.parametrize("last_step, eta", [
    (140, "1m05s"),       # 130 steps of 0.5 s
    (7460, "1h02m05s"),   # 7450 steps
])
def test_the_eta_in_hours_minutes_and_seconds(clock, logged, last_step, eta):
  tracker = progress.Progress(10, 256, last_step=last_step)
  tracker.start(0)
  run_steps(tracker, clock, 1, 10)
  assert logged() == [f"step 10: loss 0.25, accuracy 0.5, 512 images/sec, "
                      f"ETA {eta}"]


def test_a_resumed_run_says_so_and_counts_from_its_first_step(clock, logged):
  tracker = progress.Progress(every_n_steps=10, global_batch=64)
  tracker.start(40)
  rates = run_steps(tracker, clock, 41, 50)
  assert rates[50] == 10 * 64 / 5.0
  assert [rate for step, rate in rates.items() if step != 50] == [None] * 9
  assert logged() == ["Resuming from global step 40",
                      "step 50: loss 0.25, accuracy 0.5, 128 images/sec"]
  assert tracker.start_step == 40


def test_only_the_logging_rank_logs_but_every_rank_gets_the_rate(clock,
                                                                 logged):
  tracker = progress.Progress(every_n_steps=10, global_batch=256, log=False)
  tracker.start(40)
  assert run_steps(tracker, clock, 41, 50)[50] == 512.0
  assert logged() == []


def test_images_per_sec_over_the_run_leaves_the_first_step_out(clock):
  # The first step builds kernels: its 30 s do not count.
  tracker = progress.Progress(every_n_steps=100, global_batch=256)
  tracker.start(0)
  assert tracker.images_per_sec() is None
  clock.now += 30.0
  tracker.record(1, {"loss": 1.0})
  assert tracker.images_per_sec() is None   # one step: nothing to time
  run_steps(tracker, clock, 2, 10)
  assert tracker.images_per_sec() == 9 * 256 / 4.5


def test_the_step_log_has_one_line_per_step_and_evaluation(tmp_path):
  path = tmp_path / "logs" / "steps.jsonl"   # its directory made
  before = time.time()
  log = progress.StepLog(str(path))
  log.write(1, 2.5, 0.001)
  log.write(2, 2.25, 0.002, digest=[1, 0.5])
  log.close()
  # The final evaluation follows the end of training: after close().
  log.write_evaluation(2, 1.75, 0.375, 10000)
  records = [json.loads(line) for line in path.read_text().splitlines()]
  assert all(before <= r.pop("time") <= time.time() for r in records)
  assert records == [
      {"step": 1, "loss": 2.5, "learning_rate": 0.001},
      {"step": 2, "loss": 2.25, "learning_rate": 0.002,
       "weight_digest": [1.0, 0.5]},
      {"step": 2, "test_loss": 1.75, "test_accuracy": 0.375,
       "test_examples": 10000}]


def test_no_step_log_without_a_path(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  log = progress.StepLog(None)
  log.write(1, 2.5, 0.001)
  log.write_evaluation(1, 1.75, 0.375, 10000)
  log.close()
  assert list(tmp_path.iterdir()) == []
