"""The trainers the fault tests run alike, and what each one's checkpoints
and results.json call things.

    for trainer in TRAINERS:       # tf1, tf2, keras-fit[, estimator]
      trainer.module               # "legacy_hvd.train_tf2"
      trainer.checkpoint           # the checkpoint prefix: "ckpt"
      trainer.weights              # two weight names inside its checkpoints
      trainer.path                 # results.json's "path"
"""
import collections

from legacy_hvd.common import compat


class Trainer(collections.namedtuple(
    "Trainer", "module checkpoint weights path")):
  """An entry point and what its checkpoints and results.json call things."""

  def __str__(self):
    return self.module.rsplit(".", 1)[1]


# The TF1 job and its two TF2 variants get the same fault tests. TF1
# checkpoints are name-based, TF2 ones object-based.
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
