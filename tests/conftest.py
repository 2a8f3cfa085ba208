"""Fixtures: real CIFAR-10 (rebuilt from ../shared), isolated caches, test hosts."""
import os
import subprocess
import sys

import pytest

from legacy_hvd import compat
from tests.helpers import CIFAR10_CONVERTER, CIFAR10_JPEG

# Tests use TF2's eager API in this process; TF 1.15 needs it switched on
# before any op is built.
compat.enable_v2_behavior()


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
  # The converter decodes the JPEGs eagerly with TF 2: on the TF 1.15 stack
  # it runs with the default stack's Python, which the Makefile hands over.
  python = os.environ.get("LEGACY_HVD_TF2_PYTHON", sys.executable)
  subprocess.run([python, CIFAR10_CONVERTER, str(out), "--archive",
                  CIFAR10_JPEG], check=True, capture_output=True, timeout=600)
  return str(out / "cifar-10-batches-bin")


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
  """A private XDG cache and Keras home, so tests never see the user's data."""
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
  monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras-home"))
  return tmp_path


@pytest.fixture(scope="session")
def test_hosts():
  """Three test hosts, lh1..lh3 (tools/testhosts.py): each its own network
  namespace, hostname, sshd and scratch disk. Torn down at the end of the
  session, after failures and time-outs too; a killed session's hosts are
  removed by the next one. Needs root (CI is)."""
  if os.geteuid() != 0:
    pytest.skip("test hosts need root (network and mount namespaces)")
  from tools import testhosts
  with testhosts.Cluster(hosts=3) as cluster:
    yield cluster


@pytest.fixture(scope="session")
def slurm(test_hosts):
  """A real Slurm on lh1 and lh2 of the test hosts (tools/testslurm.py):
  munged on each, slurmctld on lh1, slurmd on each; sbatch, srun, scancel
  and scontrol run inside lh1. Stopped at the end of the session, before
  the hosts go."""
  from tools import testslurm
  with testslurm.Slurm(test_hosts, nodes=2) as cluster:
    yield cluster
