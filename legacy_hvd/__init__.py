"""legacy-hvd: reference Horovod data-parallel training in TF1 graph mode.

Entry points: legacy_hvd.train (TF1 graph, the main job). Library modules:
model, schedule, evaluation, hooks, data.cifar10, data.pipeline.
"""
import os

# TensorFlow's C++ start-up notices (oneDNN, CPU features) are info-level and
# printed at import, by every rank; they would bury the job's own first lines.
# Warnings and errors still show; TF_CPP_MIN_LOG_LEVEL=0 brings the notices back.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
