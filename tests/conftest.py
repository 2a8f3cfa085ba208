"""Fixtures: real CIFAR-10 (rebuilt from ../shared), isolated caches, test
hosts, and the finished runs that many tests read."""
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from legacy_hvd.common import compat
from tests import helpers
from tests.helpers import images, other_user, slurmjobs
from tests.helpers import (CIFAR10_CONVERTER, CIFAR10_JPEG, LAUNCHER,
                           assert_ok, horovodrun)
from tests.helpers.shared_runs import finished_run

# Tests use TF2's eager API in this process; TF 1.15 needs it switched on
# before any op is built.
compat.enable_v2_behavior()

# Horovod 0.28.1, the last release, does not build against TF >= 2.20: those
# stacks have none (the Makefile's WITH_HOROVOD), and there a test that
# needs it is skipped with NO_HOROVOD. A test needs Horovod when
#   - it launches a job on horovodrun: helpers.job_argv for any trainer but
#     MWMS (whose workers legacy_hvd.launch.workers starts), wrapped below;
#   - its module, or a module or program it runs, fails for want of horovod
#     (HOROVOD_MISSING, in this process or in the output of a process the
#     failure shows): at collection (HorovodModule) or as it runs
#     (pytest_runtest_makereport; a Slurm job's wait ends as soon as its
#     output shows it). Never for a test of the MWMS trainer, which must
#     run without Horovod: there it stays a failure;
#   - it is in NEEDS_HOROVOD: what the rules above cannot see.
# Everything else runs. With Horovod installed, none of this applies.
HOROVOD = importlib.util.find_spec("horovod") is not None
NO_HOROVOD = (f"no Horovod on TF {compat.tf.version.VERSION}: Horovod 0.28.1 "
              "does not build against TF >= 2.20")
NEEDS_HOROVOD = {
    # compare_paths keeps its jobs' output in log files: its error names
    # only the log.
    "tests/jobs/test_tf2_path.py::test_compare_paths_v1_is_exact_and_keras_diverges",
    # The supervisor's runs (legacy_hvd.launch.supervise relaunches horovodrun;
    # without one it fails in Popen, naming no Horovod).
    "tests/hosts/test_supervise.py::test_a_lost_host_is_left_out_and_the_job_finishes",
    "tests/hosts/test_supervise.py::test_results_list_the_restart",
    "tests/hosts/test_supervise.py::test_the_restart_budget_used_up_ends_in_one_line",
    # The first-node check runs the main job on horovodrun; its verdicts
    # name the job's log, not what the log says.
    "tests/jobs/test_gpu_check.py::test_on_cpu_every_verdict_passes",
    "tests/jobs/test_gpu_check.py::test_on_cpu_throughput_against_the_bare_loop",
}
# In an exception's text, or a process's output quoted in it (as repr too):
# horovod's import failing, or no horovodrun to run.
HOROVOD_MISSING = re.compile(
    r"No module named \\?['\"]horovod\b|horovodrun: No such file")


def _for_want_of_horovod(error):
  """Whether `error` (or what caused it) shows Horovod missing."""
  while error is not None:
    if HOROVOD_MISSING.search(str(error)):
      return True
    error = error.__cause__
  return False


class HorovodModule(pytest.Module):
  def _getobj(self):
    try:
      return super()._getobj()
    except self.CollectError as e:
      if _for_want_of_horovod(e):
        pytest.skip(NO_HOROVOD, allow_module_level=True)
      raise


if not HOROVOD:
  def pytest_pycollect_makemodule(module_path, parent):
    return HorovodModule.from_parent(parent, path=module_path)

  @pytest.hookimpl(wrapper=True)
  def pytest_runtest_makereport(item, call):
    report = yield
    needs = (report.failed and call.excinfo and "mwms" not in item.nodeid
             and _for_want_of_horovod(call.excinfo.value))
    if needs or (report.skipped and NO_HOROVOD in str(report.longrepr)):
      # Skipped, and reported at the test (not where job_argv skipped it).
      report.outcome = "skipped"
      report.longrepr = (str(item.path), item.location[1] + 1, NO_HOROVOD)
    return report

  def _job_argv_needing_horovod(job_argv):
    def guarded(np, module, args, **options):
      if module not in helpers.STRATEGY_TRAINERS:   # every other job runs under horovodrun
        pytest.skip(NO_HOROVOD)
      return job_argv(np, module, args, **options)
    return guarded

  # Before the test modules import it: helpers.horovodrun and start look it
  # up at each call, a test importing it by name gets this one.
  helpers.job_argv = _job_argv_needing_horovod(helpers.job_argv)

  def _wait_ending_without_horovod(wait_for_line):
    def guarded(job, text, timeout):
      # A Horovod trainer's Slurm job fails at once here; not its time-out.
      deadline = time.monotonic() + timeout
      while text not in job.output() and time.monotonic() < deadline:
        if HOROVOD_MISSING.search(job.output()):
          raise AssertionError(job.output()[-4000:])
        time.sleep(0.5)
      return wait_for_line(job, text, max(1, deadline - time.monotonic()))
    return guarded

  slurmjobs.wait_for_line = _wait_ending_without_horovod(
      slurmjobs.wait_for_line)

# The tools (benchmark, compare_paths) launch their jobs as the suite does:
# horovodrun's code without its per-launch build probe (tools/stacks.py,
# tests/helpers/launcher.py).
os.environ["LEGACY_HVD_HOROVODRUN"] = LAUNCHER


def pytest_configure(config):
  config.addinivalue_line(
      "markers", "image: a test of the stack's image against its venv: it "
      "runs in the TF 1.15 suite (make test TF_VERSION=1.15.5) and the GPU "
      "stack's (make test HOROVOD_GPU_OPERATIONS=NCCL, the GPU image), "
      "skipped on the others")
  config.addinivalue_line(
      "markers", "gpu_image: a test of the GPU image alone: it runs in the "
      "GPU stack's suite, skipped on the others")
  config.addinivalue_line(
      "markers", "one_stack: what it checks does not change with the "
      "TensorFlow stack (the launcher side, the test hosts' harness, the "
      "network, Slurm's side, a path another test already runs on this "
      "stack): the TF 1.15 suite (make test TF_VERSION=1.15.5) deselects it "
      "and leaves it to the default stack's run")


# Two streams, one per core (the Makefile runs pytest with `-n 2 --dist
# loadgroup`; without xdist the marks do nothing). xdist hands out whole
# groups, each to whichever worker is free, so what a group's tests share is
# made once: the tests on the test hosts are one group (one set of hosts and
# one Slurm; they mostly wait on time-outs, ssh and the scheduler, beside
# the local tests' CPU); the readers of a shared run one group per run; every
# other module one group (its module fixtures).
SHARED_GROUPS = [("test-hosts", {"test_hosts"}),
                 ("tf1-run", {"tf1_run", "tf1_evaluation"}),
                 ("tf2-run", {"tf2_run"})]


# tryfirst: xdist's worker reads the marks in this same hook, and it is
# registered after this file (without it the marks went unread, and each
# worker made its own test hosts, Slurm and shared runs).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
  for item in items:
    if not HOROVOD and item.nodeid.split("[")[0] in NEEDS_HOROVOD:
      item.add_marker(pytest.mark.skip(reason=NO_HOROVOD))
    if (not (compat.TF1 or images.GPU_STACK)
        and item.get_closest_marker("image")):
      item.add_marker(pytest.mark.skip(
          reason="the images are tested in the TF 1.15 and GPU suites"))
    if not images.GPU_STACK and item.get_closest_marker("gpu_image"):
      item.add_marker(pytest.mark.skip(
          reason="the GPU image is tested in the GPU stack's suite"))
    group = next((group for group, fixtures in SHARED_GROUPS
                  if fixtures & set(item.fixturenames)),
                 item.module.__name__)
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
  # Converted once per archive and converter, kept beside the Horovod
  # wheels (~/.cache/legacy-hvd): the other stack's run and later ones read
  # it (60,000 JPEGs to decode each time otherwise). Tests only read it.
  digest = hashlib.sha256()
  for path in (CIFAR10_JPEG, CIFAR10_CONVERTER):
    with open(path, "rb") as f:
      digest.update(f.read())
  kept = os.path.join(os.path.expanduser("~"), ".cache", "legacy-hvd",
                      "cifar10-bin-" + digest.hexdigest()[:16])
  os.makedirs(os.path.dirname(kept), exist_ok=True)
  with open(kept + ".lock", "w") as lock:
    # One conversion at a time: a second worker waits, then finds it made.
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not os.path.isdir(kept):
      out = tmp_path_factory.mktemp("cifar10")
      # The converter decodes the JPEGs eagerly with TF 2: on the TF 1.15
      # stack it runs with the default stack's Python, which the Makefile
      # hands over.
      python = os.environ.get("LEGACY_HVD_TF2_PYTHON", sys.executable)
      subprocess.run([python, CIFAR10_CONVERTER, str(out), "--archive",
                      CIFAR10_JPEG], check=True, capture_output=True,
                     timeout=600)
      # Complete or absent: copied beside, then renamed into place.
      partial = "{}.partial-{}".format(kept, os.getpid())
      shutil.copytree(str(out), partial)
      os.rename(partial, kept)
  return os.path.join(kept, "cifar-10-batches-bin")


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
def user():
  """The user the jobs that matter to users run as: one who is not root
  (tests/helpers/other_user.py, made when the suite runs as root), with
  its own software tree, its read-only data, and its own directories
  (user.fresh), removed at the end."""
  if os.geteuid() != 0:
    yield None   # the suite's own user is one
    return
  made = other_user.make()
  yield made
  other_user.remove_fresh()


@pytest.fixture(scope="session")
def tf1_run(tmp_path_factory, user):
  """One np=2 run of the TF1 job, shared by every test that only reads a
  finished run: results.json and rank-0-only files, the ranks' start
  lines, Horovod's timeline and autotune log and the step log (`files`),
  the periodic evaluation, evaluate, export, predict, plot. A test that
  changes the run works on a copy (shared_runs.copy_run). Started as
  users start the job: by a user who is not root, with its own
  `horovodrun` script, on data it cannot write."""
  root = user.fresh("tf1-run") if user else tmp_path_factory.mktemp(
      "tf1-run")
  return finished_run(root, "legacy_hvd.train", [], console_script=True, env={
      "HOROVOD_TIMELINE": str(root / "timeline.json"),
      "HOROVOD_AUTOTUNE": "1",
      "HOROVOD_AUTOTUNE_LOG": str(root / "autotune.csv"),
      "HOROVOD_AUTOTUNE_WARMUP_SAMPLES": "1",
      "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": "2"}, user=user)


@pytest.fixture(scope="session")
def tf1_evaluation(tf1_run, user):
  """legacy_hvd.evaluate (np=2) of tf1_run's checkpoint, by the same user:
  (metrics, its output)."""
  out = tf1_run.files / "evaluate.json"
  args = [f"--model_dir={tf1_run.model_dir}", f"--data_dir={tf1_run.data_dir}",
          f"--results_file={out}"]
  process = (user.horovodrun_job(2, "legacy_hvd.evaluate", args,
                                 console_script=True) if user else
             horovodrun(2, "legacy_hvd.evaluate", args))
  assert_ok(process)
  return json.loads(out.read_text()), process.stdout


@pytest.fixture(scope="session")
def tf2_run(tmp_path_factory):
  """One np=2 run of the TF2 loop, unpinned (--nocpu_affinity), evaluated
  periodically too."""
  return finished_run(tmp_path_factory.mktemp("tf2-run"),
                      "legacy_hvd.train_tf2", ["--nocpu_affinity"])


@pytest.fixture(scope="session")
def slurm(test_hosts):
  """A real Slurm on the three test hosts (tools/testslurm.py): munged on
  each, slurmctld on lh1, slurmd on each; sbatch, srun, scancel and
  scontrol run inside lh1. The jobs take lh1 and lh2 (slurmjobs.submit);
  lh3 is the node free for a job that requeues itself without a lost one.
  Stopped at the end of the session, before the hosts go."""
  from tools import testslurm
  with testslurm.Slurm(test_hosts) as cluster:
    yield cluster
