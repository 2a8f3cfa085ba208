"""JSON summaries written by rank 0: <model_dir>/results.json and friends."""
import os

from absl import logging

from legacy_hvd.common import cli
from legacy_hvd.common import compat
from legacy_hvd.common import json_files

RESULTS_FILE = "results.json"
write_json = json_files.write_json


def write_run_results(summary, config, data_source, path_name):
  """Rank 0: completes and writes results.json; fails (one line, exit 1) if the
  ranks ended with different weights."""
  summary = dict(summary, path=path_name, data_source=data_source,
                 tensorflow_version=compat.package_version(
                     "tensorflow-cpu", "tensorflow"),
                 horovod_version=compat.package_version("horovod"),
                 flags=config.as_dict())
  path = write_json(os.path.join(config.model_dir, RESULTS_FILE), summary)
  logging.info("Test accuracy %.4f over %d images; results in %s",
               summary["test_accuracy"], summary["test_examples"], path)
  if not summary["weights_in_sync"]:
    cli.fail("ranks ended with different weights; see weight_digests in "
             f"{path}")


def run_summary(metrics, weight_digests, progress, world_size, batch_size,
                steps_per_epoch):
  """The results.json fields every trainer shares (`metrics` from
  scoring.metrics_from_counts, one weight digest per rank)."""
  values = progress.last_values
  return dict(
      metrics,
      world_size=world_size,
      batch_size_per_worker=batch_size,
      global_batch=batch_size * world_size,
      start_step=progress.start_step,
      steps=progress.last_step,
      steps_per_epoch=steps_per_epoch,
      epochs=progress.last_step / steps_per_epoch,
      final_train_loss=_float_or_none(values.get("loss")),
      final_train_accuracy=_float_or_none(values.get("accuracy")),
      images_per_sec=progress.images_per_sec(),
      weight_digests=weight_digests,
      weights_in_sync=all(d == weight_digests[0] for d in weight_digests))


def _float_or_none(value):
  return None if value is None else float(value)
