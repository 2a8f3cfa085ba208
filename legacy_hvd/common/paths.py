"""Paths a user gives, checked before anything is created.

    paths.existing_ancestor("runs/new/dir")   # "/abs/runs", say

Every check of a directory or file to be created (the model directory, the
step log, an export, the pre-flight's model-directory probe) walks up to
the nearest part that exists and looks at that. Never imports TensorFlow
or Horovod.
"""
import os


def existing_ancestor(path):
  """The nearest of `path` (made absolute) and its parents that exists."""
  existing = os.path.abspath(path)
  while not os.path.exists(existing):
    existing = os.path.dirname(existing)
  return existing
