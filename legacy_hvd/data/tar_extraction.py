"""A downloaded tar archive extracted safely on every supported Python.

    tar_extraction.extract_tar(tar, target)      # refuses links, devices,
                                                 # paths outside `target`
    tar_extraction.extract_checked(tar, target)  # its Python 3.7 stand-in

An archive from the network may hold members that would land outside the
extraction directory, links out of it or device files. Python's 'data'
filter refuses them where it exists; the TF 1.15 stack's Python 3.7 lacks
it, and gets a check of our own (tests/unit/test_compat.py runs both).
"""
import os
import tarfile


def extract_tar(tar, target):
  """Extracts an open tarfile under `target`, refusing members that would
  land outside it, links out of it and device files: Python's 'data' filter
  where it exists (3.12, backported to 3.8.17+), else extract_checked.
  Raises tarfile.TarError on a refusal."""
  if hasattr(tarfile, "data_filter"):
    tar.extractall(target, filter="data")
  else:
    extract_checked(tar, target)


def extract_checked(tar, target):
  """extract_tar for Pythons without tarfile's filters (the TF 1.15 stack's
  3.7); stricter: regular files and directories only."""
  root = os.path.realpath(target)
  for member in tar.getmembers():
    path = os.path.realpath(os.path.join(root, member.name))
    if not (member.isfile() or member.isdir()):
      raise tarfile.TarError(f"{member.name}: not a regular file or directory")
    if os.path.isabs(member.name) or os.path.commonpath([root, path]) != root:
      raise tarfile.TarError(f"{member.name}: outside the extraction directory")
  tar.extractall(target)
