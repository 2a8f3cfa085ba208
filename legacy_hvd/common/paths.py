"""Paths a user gives, checked before anything is created (up to the nearest
part that exists). Never imports TensorFlow or Horovod."""
import os


def existing_ancestor(path):
  """The nearest of `path` (made absolute) and its parents that exists."""
  existing = os.path.abspath(path)
  while not os.path.exists(existing):
    existing = os.path.dirname(existing)
  return existing


def directory_problem(flag, path):
  """Why `path` (given as --flag) cannot be a directory, or None: it, or the
  nearest part of it that exists, is a file (root included)."""
  if os.path.exists(path) and not os.path.isdir(path):
    return "--{}={}: is a file; expected a directory".format(flag, path)
  parent = existing_ancestor(path)
  if not os.path.isdir(parent):
    return "--{}={}: {} is a file; expected a directory".format(
        flag, path, parent)
  return None
