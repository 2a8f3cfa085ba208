"""The trainers the fault tests run alike, and what each one's checkpoints
and results.json call things.

    for trainer in TRAINERS:       # tf1, tf2, keras-fit[, estimator][, mwms, mwms-fit]
      trainer.module               # "legacy_hvd.train_tf2"
      trainer.checkpoint           # the checkpoint prefix: "ckpt"
      trainer.weights              # two weight names inside its checkpoints
      trainer.path                 # results.json's "path"
    @pytest.mark.parametrize("trainer", legacy_stack_runs_graph_jobs())
"""
import collections

import pytest

from legacy_hvd.common import compat


class Trainer(collections.namedtuple(
    "Trainer", "module checkpoint weights path")):
  """An entry point and what its checkpoints and results.json call things."""

  def __str__(self):
    return self.module.rsplit(".", 1)[1]


# The TF1 job, its TF2 variants and the MWMS loop get the same fault
# tests. TF1 checkpoints are name-based, TF2 ones object-based.
TF2_WEIGHTS = [f"{name}/.ATTRIBUTES/VARIABLE_VALUE"
               for name in ("conv1_weights", "dense_weights")]
TRAINERS = [
    Trainer("legacy_hvd.train", "model.ckpt",
            ["conv1/weights", "dense/weights"], "tf1"),
    Trainer("legacy_hvd.train_tf2", "ckpt", TF2_WEIGHTS, "tf2"),
    Trainer("legacy_hvd.train_keras", "ckpt", TF2_WEIGHTS, "keras-fit"),
]
if compat.estimator() is not None:   # tf.estimator: TF <= 2.15
  TRAINERS.append(Trainer("legacy_hvd.train_estimator", "model.ckpt",
                          ["conv1/weights", "dense/weights"], "estimator"))
if not compat.TF1:   # tf.distribute's MultiWorkerMirroredStrategy: TF 2
  TRAINERS.append(Trainer("legacy_hvd.train_mwms", "ckpt", TF2_WEIGHTS,
                          "mwms"))
  TRAINERS.append(Trainer("legacy_hvd.train_mwms_keras", "ckpt", TF2_WEIGHTS,
                          "mwms-fit"))


def legacy_stack_runs_graph_jobs():
  """TRAINERS as pytest parameters, the TF2 twins marked one_stack.

  On the TF 1.15 stack, the legacy clusters' own, the graph jobs (the TF1
  job, the Estimator job) are what runs in production: they get every
  fault test there. The TF2 twins run there to be compared with and
  migrated to (their shared runs, migration, compare_paths, and their
  stop: the SIGTERM test takes every trainer on both stacks); their other
  fault paths go through the runtime the graph jobs share
  (training/job_faults, checkpoints/resume) and are tested on the default
  stack, the one they are written for.
  """
  return [pytest.param(trainer, id=str(trainer), marks=(
      [pytest.mark.one_stack] if trainer.path in ("tf2", "keras-fit", "mwms",
                                                   "mwms-fit")
      else [])) for trainer in TRAINERS]
