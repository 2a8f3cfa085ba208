"""The downloader, against an archive served from a local HTTP server."""
import functools
import hashlib
import http.server
import os
import threading

import pytest

from legacy_hvd.data import cifar10
from tests.helpers import cifar10_layouts
from tests.helpers import own_lines
from tests.helpers import run_module


@pytest.fixture
def served(tmp_path):
  """An HTTP server on 127.0.0.1 serving tmp_path/www; yields its base URL."""
  www = tmp_path / "www"
  www.mkdir()
  handler = functools.partial(http.server.SimpleHTTPRequestHandler,
                              directory=str(www))
  server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
  thread = threading.Thread(target=server.serve_forever, daemon=True)
  thread.start()
  yield www, f"http://127.0.0.1:{server.server_port}"
  server.shutdown()
  server.server_close()


@pytest.fixture
def official_archive(served, tmp_path):
  www, base = served
  data = cifar10_layouts.tiny_data()
  layout = cifar10_layouts.write_py_layout(str(tmp_path / "src"), data)
  path = cifar10_layouts.archive(layout, str(www / "cifar-10-python.tar.gz"))
  with open(path, "rb") as f:
    sha = hashlib.sha256(f.read()).hexdigest()
  return f"{base}/cifar-10-python.tar.gz", sha, data


def download(dest, url, checksum):
  return run_module("legacy_hvd.data", ["download", f"--dest={dest}",
                                        f"--url={url}",
                                        f"--checksum={checksum}"], timeout=60)


def test_download_verifies_and_extracts(tmp_path, official_archive):
  url, sha, data = official_archive
  dest = tmp_path / "dest"
  process = download(dest, url, f"sha256:{sha}")
  assert process.returncode == 0, process.stderr
  assert process.stdout.strip() == str(dest / cifar10.PY_DIR)
  loaded = cifar10.load(str(dest))
  assert (loaded.train_images == data.train_images).all()
  assert sorted(os.listdir(dest)) == [cifar10.PY_DIR, "cifar-10-python.tar.gz"]


def test_wrong_checksum_leaves_nothing(tmp_path, official_archive):
  url, _, _ = official_archive
  dest = tmp_path / "dest"
  process = download(dest, url, "sha256:" + "0" * 64)
  assert process.returncode == 1
  lines = own_lines(process.stderr)
  assert len(lines) == 1 and "sha256 is" in lines[0] and "expected 000" in lines[0]
  assert os.listdir(dest) == []


def test_unreachable_url_is_one_line(tmp_path, served):
  _, base = served
  process = download(tmp_path / "dest", f"{base}/missing.tar.gz", "md5:00")
  assert process.returncode == 1
  lines = own_lines(process.stderr)
  assert len(lines) == 1 and "download failed" in lines[0] and "404" in lines[0]
