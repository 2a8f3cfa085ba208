"""JSON summaries written by rank 0: <model_dir>/results.json and friends.

    write_json(path, summary_dict)   # atomic: the complete file or none
"""
import json
import os

RESULTS_FILE = "results.json"


def write_json(path, summary):
  tmp = f"{path}.tmp-{os.getpid()}"
  with open(tmp, "w") as f:
    json.dump(summary, f, indent=2, sort_keys=True)
    f.write("\n")
  os.replace(tmp, path)
  return path


def run_summary(metrics, weight_digests, progress, world_size, batch_size,
                steps_per_epoch):
  """The results.json fields both trainers share, from what they measured.

  metrics: evaluation.metrics_from_counts(...); weight_digests: one list per
  rank; progress: the run's progress.Progress.
  """
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
