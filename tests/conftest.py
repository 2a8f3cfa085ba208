"""Fixtures: real CIFAR-10 (rebuilt from ../shared), isolated caches."""
import os
import subprocess
import sys

import pytest

from tests.helpers import CIFAR10_CONVERTER, CIFAR10_JPEG


@pytest.fixture(scope="session")
def real_cifar10(tmp_path_factory):
  """The real CIFAR-10 in the official binary layout; returns that directory."""
  given = os.environ.get("LEGACY_HVD_CIFAR10_BIN")
  if given:
    return given
  if not os.path.exists(CIFAR10_JPEG) or not os.path.exists(CIFAR10_CONVERTER):
    pytest.skip(f"real CIFAR-10 not found at {CIFAR10_JPEG} (set "
                "LEGACY_HVD_CIFAR10_JPEG or LEGACY_HVD_CIFAR10_BIN)")
  out = tmp_path_factory.mktemp("cifar10")
  subprocess.run([sys.executable, CIFAR10_CONVERTER, str(out), "--archive",
                  CIFAR10_JPEG], check=True, capture_output=True, timeout=600)
  return str(out / "cifar-10-batches-bin")


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
  """A private XDG cache and Keras home, so tests never see the user's data."""
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
  monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras-home"))
  return tmp_path
