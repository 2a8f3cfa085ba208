"""A downloaded tar archive extracted safely on every supported Python:
tar_extraction.extract_tar, and its Python 3.7 stand-in
tar_extraction.extract_checked (tests/unit/test_compat.py runs both)."""
import os
import tarfile


def extract_tar(tar, target):
  """Extracts `tar` under `target`, refusing members outside it, links out and
  devices (TarError): Python's 'data' filter (3.12, 3.8.17+), else
  extract_checked."""
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
