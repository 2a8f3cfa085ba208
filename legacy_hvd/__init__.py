"""legacy-hvd: reference Horovod data-parallel training in TF1 graph mode.

Entry points (`python -m legacy_hvd.NAME`, or the console script
legacy-hvd-NAME with `-` for `_`), each a sequence of what it does:

  train         the TF1 graph job: MonitoredTrainingSession, hooks
  train_tf2     its TF2 twin: tf.function + DistributedGradientTape
  train_keras   the TF2 path as Keras users write it: model.fit
  train_estimator  the TF1 job as tf.estimator code (TF <= 2.15)
  evaluate      scores a saved checkpoint on the test set, across ranks
  export        a checkpoint as a SavedModel or a frozen graph
  predict       classifies image files with an export
  preflight     will the job start on these hosts?
  data          downloads CIFAR-10 (legacy_hvd/data/__main__.py)
  slurm         runs a trainer under Slurm, every rank an srun task
  supervise     runs a trainer and relaunches it on the hosts left when
                one is lost (for clusters without a scheduler)

Modules, by layer; a module imports only from its own layer and those
below it (tests/test_layers.py reads the imports and checks it):

  trainer core: trainer, eager_trainer, graph_trainer
      What the trainers share: the run's plan, input, progress, world line,
      start-up, restore and final evaluation; the two graph trainers' step.
  distributed side: faults, startup, hooks, callbacks, heldout, devices,
      peers, keeper, world, placement, checkpoints, migration, results,
      feasibility, no_horovod, host_pool, run_outcome
      Horovod, hosts, processes and files of a job; never reaches a trainer.
  model side: model, schedule, optimizers, numerics, keras_model, scoring,
      data.cifar10, data.embedded, data.download, data.pipeline
      The model, its maths and its input; never imports Horovod nor the
      distributed side.
  foundation: cli, config, compat, paths, progress, signals,
      checkpoint_state, write_faults, hostlists
      Flag and error handling, the frozen config, the TF-version helpers,
      the line of a failed write, host lists; no Horovod.

Only entry points import `flags` (the absl definitions, a top-level
package) and read FLAGS; only they and the two upper layers import Horovod.
"""
import os

# TensorFlow's C++ start-up notices (oneDNN, CPU features) are info-level and
# printed at import, by every rank; they would bury the job's own first lines.
# Warnings and errors still show; TF_CPP_MIN_LOG_LEVEL=0 brings the notices back.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
