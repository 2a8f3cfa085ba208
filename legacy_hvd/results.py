"""The run summary written by rank 0 at the end: <model_dir>/results.json.

    write_results(model_dir, summary_dict)   # atomic: complete file or none
"""
import json
import os

RESULTS_FILE = "results.json"


def write_results(model_dir, summary):
  path = os.path.join(model_dir, RESULTS_FILE)
  tmp = f"{path}.tmp-{os.getpid()}"
  with open(tmp, "w") as f:
    json.dump(summary, f, indent=2, sort_keys=True)
    f.write("\n")
  os.replace(tmp, path)
  return path
