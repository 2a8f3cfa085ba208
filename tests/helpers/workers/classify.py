"""Classifies a test set with an export, on whichever stack runs this file.

    python tests/helpers/workers/classify.py EXPORT DATA_DIR OUT.npy

EXPORT is a SavedModel directory or a frozen-graph file of legacy_hvd.export;
writes the int64 classes of every test image of DATA_DIR to OUT.npy. The
cross-stack tests run it with each stack's Python on the other's exports.
"""
import sys

import numpy as np

from legacy_hvd import predict
from legacy_hvd.common import compat
from legacy_hvd.data import cifar10


def main(export, data_dir, out):
  compat.enable_v2_behavior()
  classify = predict.load_classifier(export)
  classes, _ = classify(cifar10.load(data_dir).test_images)
  np.save(out, np.asarray(classes))


if __name__ == "__main__":
  main(*sys.argv[1:])
