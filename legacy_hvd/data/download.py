"""Downloads the official CIFAR-10 archive, verifies it, extracts it atomically:
a wrong checksum, a damaged archive or an unexpected member leaves `dest` as
it was; the layout is renamed into place whole."""
import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request

from legacy_hvd.data import cifar10
from legacy_hvd.data import tar_extraction

# The archive Keras downloads, and the md5 its publisher lists for it.
DEFAULT_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
DEFAULT_CHECKSUM = "md5:c58f30108f718f92721af3b95e74349a"
CHUNK_BYTES = 1 << 20
TIMEOUT_SECONDS = 60


def parse_checksum(text):
  """'md5:HEX' or 'sha256:HEX' -> (algorithm, hex digest)."""
  algorithm, _, digest = text.partition(":")
  if algorithm not in ("md5", "sha256") or not digest:
    raise cifar10.DataError(f"--checksum={text}: expected md5:HEX or "
                            "sha256:HEX")
  return algorithm, digest.lower()


def download(dest, url=DEFAULT_URL, checksum=DEFAULT_CHECKSUM):
  """Returns the extracted layout directory under `dest`."""
  algorithm, expected = parse_checksum(checksum)
  os.makedirs(dest, exist_ok=True)
  archive = os.path.join(dest, os.path.basename(url) or "cifar-10.tar.gz")
  with tempfile.TemporaryDirectory(dir=dest, prefix=".download-") as work:
    partial = os.path.join(work, "archive.tar.gz")
    actual = _fetch(url, partial, algorithm)
    if actual != expected:
      raise cifar10.DataError(f"{url}: {algorithm} is {actual}, expected "
                              f"{expected}; the download is damaged or not "
                              "the official archive")
    cifar10.load(partial)   # every file present and valid, or DataError
    layout = _extract(partial, work)
    final = os.path.join(dest, os.path.basename(layout))
    if os.path.exists(final):
      shutil.rmtree(final)
    os.rename(layout, final)
    os.replace(partial, archive)
  return final


def _fetch(url, path, algorithm):
  digest = hashlib.new(algorithm)
  try:
    with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response, \
        open(path, "wb") as out:
      for chunk in iter(lambda: response.read(CHUNK_BYTES), b""):
        digest.update(chunk)
        out.write(chunk)
  except (urllib.error.URLError, OSError, ValueError) as e:
    raise cifar10.DataError(f"{url}: download failed ({e})") from None
  return digest.hexdigest()


def _extract(archive, work):
  """Extracts the one layout directory; refuses anything outside it."""
  target = os.path.join(work, "extracted")
  with tarfile.open(archive, "r:gz") as tar:
    members = tar.getmembers()
    tops = {m.name.split("/")[0] for m in members}
    if len(tops) != 1 or tops.pop() not in (cifar10.BIN_DIR, cifar10.PY_DIR):
      raise cifar10.DataError(f"{archive}: expected one top directory, "
                              f"{cifar10.BIN_DIR} or {cifar10.PY_DIR}")
    # Refuses absolute paths, links out and device files.
    tar_extraction.extract_tar(tar, target)
  return os.path.join(target, members[0].name.split("/")[0])
