"""legacy_hvd.common.results: rank 0's JSON files, written whole or not at all, and
results.json's fields from what a run measured."""
import json
import logging
import os
import time

import pytest

from legacy_hvd.common import compat
from legacy_hvd.common import progress
from legacy_hvd.common import results
from legacy_hvd.common.config import Config

METRICS = {"test_loss": 1.5, "test_accuracy": 0.5, "test_examples": 10000}


def test_write_json_writes_sorted_indented_and_whole(tmp_path):
  path = str(tmp_path / "summary.json")
  assert results.write_json(path, {"b": [1, 2], "a": 0.5}) == path
  assert (tmp_path / "summary.json").read_text() == (
      '{\n  "a": 0.5,\n  "b": [\n    1,\n    2\n  ]\n}\n')
  results.write_json(path, {"a": 1})   # replaced, not appended to
  assert json.loads((tmp_path / "summary.json").read_text()) == {"a": 1}
  assert os.listdir(tmp_path) == ["summary.json"]   # no temporary file


def test_a_failed_write_names_the_file(tmp_path):
  path = str(tmp_path / "gone" / "results.json")
  with pytest.raises(OSError) as raised:
    results.write_json(path, {"a": 1})
  assert path in str(raised.value)
  assert os.listdir(tmp_path) == []


def finished_progress(monkeypatch):
  """A Progress of steps 40..60 of 256 images, 0.5 s each on a test clock,
  the last loss 0.75 and accuracy 0.5."""
  now = [0.0]
  monkeypatch.setattr(time, "perf_counter", lambda: now[0])
  run = progress.Progress(every_n_steps=100, global_batch=256, log=False)
  run.start(40)
  for step in range(41, 61):
    now[0] += 0.5
    run.record(step, {"loss": 0.75, "accuracy": 0.5})
  return run


def test_the_run_summary_from_what_the_run_measured(monkeypatch):
  digests = [[1.0, 2.0], [1.0, 2.0]]
  summary = results.run_summary(METRICS, digests, finished_progress(
      monkeypatch), world_size=2, batch_size=128, steps_per_epoch=20)
  assert summary == dict(
      METRICS, world_size=2, batch_size_per_worker=128, global_batch=256,
      start_step=40, steps=60, steps_per_epoch=20, epochs=3.0,
      final_train_loss=0.75, final_train_accuracy=0.5,
      images_per_sec=19 * 256 / 9.5, weight_digests=digests,
      weights_in_sync=True)


def test_ranks_with_other_weights_are_not_in_sync(monkeypatch):
  summary = results.run_summary(METRICS, [[1.0, 2.0], [1.0, 2.5]],
                                finished_progress(monkeypatch), 2, 128, 20)
  assert summary["weights_in_sync"] is False


def test_results_json_holds_the_run_its_stack_and_its_flags(tmp_path, caplog):
  caplog.set_level(logging.INFO)
  config = Config(model_dir=str(tmp_path), max_steps=60, epochs=None)
  summary = dict(METRICS, weights_in_sync=True, steps=60)
  results.write_run_results(summary, config, "generated", "tf1")
  written = json.loads((tmp_path / results.RESULTS_FILE).read_text())
  assert written == dict(
      summary, path="tf1", data_source="generated",
      tensorflow_version=compat.package_version("tensorflow-cpu",
                                                "tensorflow"),
      horovod_version=compat.package_version("horovod"),
      flags=config.as_dict())
  assert written["flags"]["max_steps"] == 60
  assert [r.getMessage() for r in caplog.records] == [
      "Test accuracy 0.5000 over 10000 images; results in "
      f"{tmp_path / results.RESULTS_FILE}"]


def test_weights_out_of_sync_end_the_run_in_one_line(tmp_path, capsys):
  config = Config(model_dir=str(tmp_path))
  summary = dict(METRICS, weights_in_sync=False)
  with pytest.raises(SystemExit) as exited:
    results.write_run_results(summary, config, "generated", "tf2")
  assert exited.value.code == 1
  path = tmp_path / results.RESULTS_FILE
  assert capsys.readouterr().err.splitlines()[-1].endswith(
      ": error: ranks ended with different weights; see weight_digests in "
      f"{path}")
  assert json.loads(path.read_text())["weights_in_sync"] is False
