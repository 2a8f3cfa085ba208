"""legacy-hvd: reference Horovod data-parallel training in TF1 graph mode.

Entry points (`python -m legacy_hvd.NAME`, or the console script
legacy-hvd-NAME with `-` for `_`). A trainer shows every Horovod touch
point of its path in its own file, each behind a `# Horovod:` comment:

  train            the TF1 graph job: MonitoredTrainingSession, hooks
  train_tf2        its TF2 twin: tf.function + DistributedGradientTape
  train_keras      the TF2 path as Keras users write it: model.fit
  train_estimator  the TF1 job as tf.estimator code (TF <= 2.15)
  train_mwms       the TF2 loop on tf.distribute's MultiWorkerMirroredStrategy,
                   no Horovod (its touch points behind `# tf.distribute:`)
  evaluate         scores a saved checkpoint on the test set, across ranks
  export           a checkpoint as a SavedModel or a frozen graph
  predict          classifies image files with an export

The launchers live in their room with their pieces, as horovodrun's main
lives in horovod/runner (`python -m legacy_hvd.launch.NAME`; the console
scripts keep their names): launch.slurm (legacy-hvd-slurm),
launch.supervise, launch.preflight, launch.workers
(legacy-hvd-launch-workers); data/__main__.py downloads CIFAR-10
(legacy-hvd-data).

Rooms, one subpackage per concern; each imports only from itself and the
rooms its line names (tests/unit/test_layers.py reads every import and checks
it, and that docs/layout.md lists the same rooms and modules):

  common       imports: (none)
  data         imports: common
  launch       imports: common, data
  model        imports: common, data
  faults       imports: common
  rank         imports: common, data, model, faults
  collectives  imports: common, rank
  checkpoints  imports: common, data, model, rank
  training     imports: common, data, model, faults, rank, collectives, checkpoints

Each room's own docstring lists its modules. No module imports an entry
point; only entry points (the launchers' and data's among them) import
`flags` (the absl definitions, a top-level package) and read FLAGS.
Horovod is imported by the entry points (a launcher takes Horovod's
rendezvous server, never its frameworks) and by the collectives and
training rooms only: never by train_mwms, nor by what it imports (it runs
where Horovod does not build). Importing the launch room never imports
TensorFlow (the pre-flight probe imports it on each host, when it runs).
"""
import os

# TensorFlow's C++ start-up notices (oneDNN, CPU features) are info-level and
# printed at import, by every rank; they would bury the job's own first lines.
# Warnings and errors still show; TF_CPP_MIN_LOG_LEVEL=0 brings the notices
# back.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
