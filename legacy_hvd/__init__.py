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
  train_mwms_keras  Keras model.fit on that strategy, no Horovod
  evaluate         scores a saved checkpoint on the test set, across ranks
  export           a checkpoint as a SavedModel or a frozen graph
  predict          classifies image files with an export

The launchers live in the launch room beside their pieces, as horovodrun's
main lives in horovod/runner (`python -m legacy_hvd.launch.NAME`).

Rooms, one subpackage per concern; each imports only from itself and the
rooms its line names (tests/unit/test_layers.py checks every import):

  common       imports: (none)
  data         imports: common
  launch       imports: common, data
  model        imports: common, data
  faults       imports: common
  rank         imports: common, data, model, faults
  collectives  imports: common, rank
  checkpoints  imports: common, data, model, rank
  training     imports: common, data, model, faults, rank, collectives, checkpoints

Each room's docstring lists its modules. No module imports an entry point;
only entry points import `flags` and read FLAGS. Horovod is imported by the
entry points and the collectives and training rooms only, never by train_mwms
or what it imports (it runs where Horovod does not build); importing the
launch room never imports TensorFlow (the pre-flight probe does, when run)."""
import os

# TensorFlow's C++ start-up notices (oneDNN, CPU features), printed at import
# by every rank, would bury the job's own first lines; warnings and errors
# still show, and TF_CPP_MIN_LOG_LEVEL=0 brings the notices back.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
