"""legacy-hvd: reference Horovod data-parallel training in TF1 graph mode.

Entry points (python -m ...): legacy_hvd.train (the TF1 graph job),
legacy_hvd.train_tf2 (its TF2 twin), legacy_hvd.evaluate, legacy_hvd.export,
legacy_hvd.predict, legacy_hvd.data (download), legacy_hvd.slurm (runs a
trainer under Slurm: every rank an srun task; it never imports a trainer). Library modules: model,
schedule, optimizers, evaluation, hooks, progress, checkpoints, signals,
runtime, results, cli, config, compat (TF 1.15 / TF 2 differences);
data.cifar10, data.embedded, data.pipeline.
"""
import os

# TensorFlow's C++ start-up notices (oneDNN, CPU features) are info-level and
# printed at import, by every rank; they would bury the job's own first lines.
# Warnings and errors still show; TF_CPP_MIN_LOG_LEVEL=0 brings the notices back.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
