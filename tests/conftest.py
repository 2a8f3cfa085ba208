"""Fixtures: real CIFAR-10 (rebuilt from ../shared), isolated caches, test
hosts, and the finished runs that many tests read."""
import collections
import json
import os
import shutil
import subprocess
import sys

import pytest

from legacy_hvd import compat
from legacy_hvd.data import embedded
from tests.helpers import (CIFAR10_CONVERTER, CIFAR10_JPEG, assert_ok,
                           horovodrun)

# Tests use TF2's eager API in this process; TF 1.15 needs it switched on
# before any op is built.
compat.enable_v2_behavior()


def pytest_configure(config):
  config.addinivalue_line(
      "markers", "one_stack: what it checks does not change with the "
      "TensorFlow stack (the launcher side, the test hosts' harness, the "
      "network, Slurm's side, a path another test already runs on this "
      "stack): the TF 1.15 suite (make test TF_VERSION=1.15.5) deselects it "
      "and leaves it to the default stack's run")


# Two streams, one per core: the tests on the test hosts (mostly waiting on
# time-outs, ssh and the scheduler) beside the local ones. The Makefile runs
# pytest with `-n 2 --dist loadgroup`; without xdist the marks do nothing.
HOSTS_GROUP, LOCAL_GROUP = "test-hosts", "local"


def pytest_collection_modifyitems(items):
  for item in items:
    group = (HOSTS_GROUP if "test_hosts" in item.fixturenames
             else LOCAL_GROUP)
    item.add_marker(pytest.mark.xdist_group(group))


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


# A finished run: its model directory, its data, and what its ranks printed.
Run = collections.namedtuple("Run", "model_dir data_dir output files")
# Rank 0 creates files with mode 644, every other rank with 600: any file in
# the model directory that is not group-readable was written by another rank.
RANK_UMASK = 'if [ "$HOROVOD_RANK" != 0 ]; then umask 077; else umask 022; fi'
SHARED_STEPS = 40
# The shared runs also evaluate on the test set every this many steps.
SHARED_EVAL_EVERY = 20


def _finished_run(root, module, args, env=None):
  """horovodrun -np 2 of `module` on the generated data, to its end."""
  data_dir = embedded.ensure_generated(str(root / "data"))
  model_dir = root / "model"
  process = horovodrun(2, module, [
      f"--model_dir={model_dir}", f"--data_dir={data_dir}",
      f"--max_steps={SHARED_STEPS}", "--log_every_n_steps=10",
      f"--save_checkpoints_steps={SHARED_STEPS // 2}",
      f"--eval_every_n_steps={SHARED_EVAL_EVERY}",
      f"--step_log={root / 'steps.jsonl'}", *args],
                       env=env, wrapper=RANK_UMASK)
  assert_ok(process)
  return Run(model_dir, data_dir, process.stdout + process.stderr, root)


@pytest.fixture(scope="session")
def tf1_run(tmp_path_factory):
  """One np=2 run of the TF1 job, shared by every test that only reads a
  finished run: results.json and rank-0-only files, the ranks' start
  lines, Horovod's timeline and autotune log and the step log (`files`),
  the periodic evaluation, evaluate, export, predict, plot. A test that changes the run works on a copy (copy_run)."""
  root = tmp_path_factory.mktemp("tf1-run")
  return _finished_run(root, "legacy_hvd.train", [], env={
      "HOROVOD_TIMELINE": str(root / "timeline.json"),
      "HOROVOD_AUTOTUNE": "1",
      "HOROVOD_AUTOTUNE_LOG": str(root / "autotune.csv"),
      "HOROVOD_AUTOTUNE_WARMUP_SAMPLES": "1",
      "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": "2"})


@pytest.fixture(scope="session")
def tf1_evaluation(tf1_run):
  """legacy_hvd.evaluate (np=2) of tf1_run's checkpoint: (metrics, its
  output)."""
  out = tf1_run.files / "evaluate.json"
  process = horovodrun(2, "legacy_hvd.evaluate", [
      f"--model_dir={tf1_run.model_dir}", f"--data_dir={tf1_run.data_dir}",
      f"--results_file={out}"])
  assert_ok(process)
  return json.loads(out.read_text()), process.stdout


@pytest.fixture(scope="session")
def tf2_run(tmp_path_factory):
  """One np=2 run of the TF2 loop, unpinned (--nocpu_affinity), evaluated
  periodically too."""
  return _finished_run(tmp_path_factory.mktemp("tf2-run"),
                       "legacy_hvd.train_tf2", ["--nocpu_affinity"])


def copy_run(run, target):
  """A copy of `run`'s model directory at `target`, to resume or change.

  The TF1 job's checkpoint state file names its checkpoints by absolute
  path: the copy's names the copy's."""
  shutil.copytree(run.model_dir, target)
  state = target / "checkpoint"
  if state.exists():
    state.write_text(state.read_text().replace(str(run.model_dir),
                                               str(target)))
  return target


@pytest.fixture(scope="session")
def slurm(test_hosts):
  """A real Slurm on lh1 and lh2 of the test hosts (tools/testslurm.py):
  munged on each, slurmctld on lh1, slurmd on each; sbatch, srun, scancel
  and scontrol run inside lh1. Stopped at the end of the session, before
  the hosts go."""
  from tools import testslurm
  with testslurm.Slurm(test_hosts, nodes=2) as cluster:
    yield cluster
