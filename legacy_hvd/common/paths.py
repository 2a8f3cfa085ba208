"""Paths a user gives, checked before anything is created (up to the nearest
part that exists). Never imports TensorFlow or Horovod."""
import os


def existing_ancestor(path):
  """The nearest of `path` (made absolute) and its parents that exists."""
  existing = os.path.abspath(path)
  while not os.path.exists(existing):
    existing = os.path.dirname(existing)
  return existing
