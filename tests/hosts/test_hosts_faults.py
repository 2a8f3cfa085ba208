"""A host lost mid-run (its ranks killed; its cable cut) or a rank stuck
(stopped): the job ends in a bounded time naming the host or rank, rank 0's
checkpoint is intact, and a relaunch resumes from it."""
import os
import re
import signal
import time

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from legacy_hvd.common import checkpoint_state
from legacy_hvd.common import compat
from tests.helpers import hostjobs
from tests.helpers import error_lines, rank_pid, wait_for

# The cut link is noticed by Gloo's time-out (HOROVOD_GLOO_TIMEOUT_SECONDS,
# 30 s by default); the test shortens it.
GLOO_TIMEOUT = 10
PROBE_AND_EXIT = 20    # the survivors' probe (3 s) and horovodrun's shutdown
# Each bound: the promise (docs/faults.md) and a margin measured under
# load. A cut link and a stuck rank are both named after the Gloo time-out
# and the reporter's probe (3 s). Measured (2026-12-04): both named
# 13.0-13.1 s after the fault alone and with one busy process per core
# beside the host tests; the stuck rank 22.4 s once under the suite's own
# load (two test workers and the image build): 9.4 s over the promise, and
# its margin is about twice that.
CUT_NAMED = GLOO_TIMEOUT + 3 + 14
STUCK_NAMED = GLOO_TIMEOUT + 3 + 17


@pytest.fixture(scope="module")
def data_dir(test_hosts):
  return hostjobs.put_data(test_hosts, ["lh1", "lh2"])


def latest_checkpoint(model_dir):
  """The newest checkpoint's prefix under `model_dir` as the test sees it."""
  state = tf.train.get_checkpoint_state(model_dir)
  if state is None:
    return None
  return os.path.join(model_dir,
                      os.path.basename(state.model_checkpoint_path))


def checkpoint_step(model_dir):
  return checkpoint_state.latest_step(model_dir) or None


def assert_checkpoint_intact(model_dir):
  reader = tf.train.load_checkpoint(latest_checkpoint(model_dir))
  dtypes = reader.get_variable_to_dtype_map()
  for name in reader.get_variable_to_shape_map():
    if dtypes[name].is_floating:   # (TF2 checkpoints also hold a string)
      assert np.all(np.isfinite(reader.get_tensor(name)))


# The job's layouts: 2 hosts x 2 ranks (lh2's ranks 2 and 3), or 2 hosts x 1
# rank (lh2's rank 1); (np, its -H, lh2's ranks as the lost-host line names
# them, the -H of the relaunch on lh1 alone).
TWO_BY_TWO = (4, "lh1:2,lh2:2", "ranks 2, 3", "lh1:2")
TWO_BY_ONE = (2, "lh1:1,lh2:1", "rank 1", "lh1:1")


def assert_lost_host_named(code, output, how, model_dir, layout=TWO_BY_TWO):
  """One error line naming lh2 (its ranks in `layout`) and the relaunch, no
  rank's traceback, and rank 0's checkpoint (step >= 20) intact in
  `model_dir`."""
  _, _, ranks, remaining = layout
  assert code != 0
  errors = error_lines(output)
  assert len(errors) == 1, output[-6000:]
  assert ("error: on lh1: lost host lh2 ({}: {})".format(ranks, how)
          in errors[0]), errors[0]
  assert ("relaunch on the remaining hosts (-H {})".format(remaining)
          in errors[0]), errors[0]
  assert "]<stderr>:Traceback" not in output
  assert checkpoint_step(model_dir) >= 20
  assert_checkpoint_intact(model_dir)


def lose_host_mid_run(test_hosts, data_dir, tmp_path, name, fault, bound,
                      env=None, module="legacy_hvd.train", layout=TWO_BY_TWO):
  """Runs `module` on 2 hosts (`layout`: 2 x 2 ranks by default), applies
  fault(lh2) after a checkpoint; returns
  (seconds from the fault to the launcher's exit, exit code, output,
  model_dir as the test sees it, seconds from the fault to the first error
  line or None)."""
  lh1 = test_hosts.hosts[0]
  model_dir = os.path.join(test_hosts.scratch, name)
  outside = lh1.path(model_dir)
  log_path = tmp_path / (name + ".log")
  named = None
  with open(log_path, "w") as log:
    job = hostjobs.launch(
        test_hosts, layout[0], ["-H", layout[1]], model_dir,
        ["--data_dir=" + data_dir, "--max_steps=100000",
         "--save_checkpoints_steps=20", "--log_every_n_steps=10"], log, env=env,
        module=module)
    try:
      wait_for(lambda: (checkpoint_step(outside) or 0) >= 20, 240,
                        "a checkpoint at step 20")
      fault(test_hosts.hosts[1])
      faulted = time.monotonic()
      while job.poll() is None and time.monotonic() < faulted + bound:
        if named is None and error_lines(log_path.read_text()):
          named = time.monotonic() - faulted
        time.sleep(0.1)
      job.wait(timeout=max(0.1, faulted + bound - time.monotonic()))
      seconds = time.monotonic() - faulted
    finally:
      if job.poll() is None:
        job.kill()
        job.wait()
  return seconds, job.returncode, log_path.read_text(), model_dir, named


def test_killed_host_is_named_and_relaunch_resumes(test_hosts, data_dir,
                                                   tmp_path):
  lh1, lh2 = test_hosts.hosts[:2]
  seconds, code, output, model_dir, _ = lose_host_mid_run(
      test_hosts, data_dir, tmp_path, "killed",
      lambda host: host.kill("legacy_hvd.train"), bound=60)
  print("killed host: launcher exited {:.1f} s after the kill".format(seconds))
  assert_lost_host_named(code, output, "processes ended",
                         lh1.path(model_dir))
  saved = checkpoint_step(lh1.path(model_dir))

  code, output = hostjobs.run(
      test_hosts, 2, ["-H", "lh1:2"], model_dir,
      ["--data_dir=" + data_dir, "--max_steps={}".format(saved + 10)],
      str(tmp_path / "relaunch.log"), interface=None)
  assert code == 0, output[-6000:]
  assert "Resuming from global step {}".format(saved) in output
  assert re.search(r"Resuming at global step {} with 2 ranks; the checkpoint "
                   r"was written by 4 ranks".format(saved), output)
  with open(os.path.join(lh1.path(model_dir), "results.json")) as f:
    results = f.read()
  assert '"world_size": 2' in results
  assert '"start_step": {}'.format(saved) in results


@pytest.mark.one_stack
def test_a_reporter_that_dies_too_leaves_the_line_to_the_next(
    test_hosts, data_dir, tmp_path):
  # Gloo can abort a survivor whose peers died mid-collective. Here rank 0,
  # the one that would report, dies once rank 1 has acknowledged it: rank 1
  # must then report both, before horovodrun's SIGKILL (5 s after a rank
  # ended).
  lh1 = test_hosts.hosts[0]

  def lose_lh2_then_rank0(lh2):
    rank0 = rank_pid(os.path.join(test_hosts.scratch, "reporter"), 0)
    assert rank0, "rank 0 of the job not found"
    os.kill(rank0, signal.SIGSTOP)   # answers probes, reports nothing
    lh2.kill("legacy_hvd.train")
    time.sleep(1.5)                  # rank 1 probes and acknowledges rank 0
    os.kill(rank0, signal.SIGKILL)

  seconds, code, output, model_dir, _ = lose_host_mid_run(
      test_hosts, data_dir, tmp_path, "reporter", lose_lh2_then_rank0,
      bound=60)
  print("reporter died: launcher exited {:.1f} s after the kill".format(
      seconds))
  assert_lost_host_named(code, output, "processes ended",
                         lh1.path(model_dir))
  assert "; rank 0 of 2 on host lh1 (process ended);" in output


@pytest.mark.one_stack
def test_cut_link_is_named_within_the_gloo_time_out(test_hosts, data_dir,
                                                    tmp_path):
  lh1, lh2 = test_hosts.hosts[:2]
  try:
    # The line is the job's promise (CUT_NAMED); horovodrun's shutdown after
    # it (its ssh to the cut host) took over 30 s under the suite's load.
    seconds, code, output, model_dir, named = lose_host_mid_run(
        test_hosts, data_dir, tmp_path, "cut",
        lambda host: host.link(False), bound=60,
        env={"HOROVOD_GLOO_TIMEOUT_SECONDS": str(GLOO_TIMEOUT)})
    assert named is not None, output[-6000:]
    print("cut link: named {:.1f} s, launcher exited {:.1f} s after the "
          "cut".format(named, seconds))
    assert named < CUT_NAMED, output[-6000:]
    assert_lost_host_named(code, output, "host unreachable",
                           lh1.path(model_dir))
    # lh2's ranks, cut off, end by the same time-out: nobody waits forever.
    wait_for(lambda: not lh2.processes("legacy_hvd.train"),
                      GLOO_TIMEOUT + PROBE_AND_EXIT, "lh2's ranks to end")
  finally:
    lh2.link(True)


@pytest.mark.parametrize("module", [
    # The TF2 twins on the default stack (trainers.legacy_stack_runs_graph_jobs
    # says why).
    pytest.param("legacy_hvd.train_tf2", marks=pytest.mark.one_stack),
    pytest.param("legacy_hvd.train_keras", marks=pytest.mark.one_stack),
    # Its collectives fail inside Estimator.train, Estimator's own loop.
    pytest.param("legacy_hvd.train_estimator", marks=pytest.mark.skipif(
        compat.estimator() is None, reason="no tf.estimator (TF >= 2.16)")),
    # No Horovod: its workers started over ssh by legacy_hvd.launch.workers;
    # a dead peer is noticed after TensorFlow's heartbeat time-out (10 s).
    pytest.param("legacy_hvd.train_mwms", marks=pytest.mark.one_stack)])
def test_other_trainers_name_a_killed_host(test_hosts, data_dir, tmp_path,
                                           module):
  # The same lost-host line as the TF1 job's (legacy_hvd/training/job_faults.py). One
  # rank per host: what is the trainer's own is how its collectives fail
  # and that it then reaches that line; how a host's ranks are grouped in
  # it is the watch's, the same for every trainer, which the TF1 job's
  # 2 x 2 ranks above show.
  lh1 = test_hosts.hosts[0]
  name = module.rsplit(".", 1)[1]
  seconds, code, output, model_dir, _ = lose_host_mid_run(
      test_hosts, data_dir, tmp_path, name,
      lambda host: host.kill(module), bound=60, module=module,
      layout=TWO_BY_ONE)
  print("{}: launcher exited {:.1f} s after the kill".format(name, seconds))
  assert_lost_host_named(code, output, "process ended", lh1.path(model_dir),
                         layout=TWO_BY_ONE)


def test_stuck_rank_is_named_ended_and_relaunch_resumes(test_hosts, data_dir,
                                                        tmp_path):
  # A rank that is alive but runs no code (SIGSTOP; a hung file system or
  # a wedged driver look the same to the others): the kernel still accepts
  # connections for it, but no thread of it answers a probe.
  lh1, lh2 = test_hosts.hosts[:2]
  model_dir = os.path.join(test_hosts.scratch, "stuck")

  def freeze_rank2(lh2):
    rank2 = rank_pid(model_dir, 2)
    assert rank2 in lh2.processes("legacy_hvd.train"), "rank 2 not on lh2"
    os.kill(rank2, signal.SIGSTOP)

  # The line is the job's promise (STUCK_NAMED); horovodrun's shutdown
  # after it, under a loaded machine, gets the killed host's bound.
  seconds, code, output, _, named = lose_host_mid_run(
      test_hosts, data_dir, tmp_path, "stuck", freeze_rank2, bound=60,
      env={"HOROVOD_GLOO_TIMEOUT_SECONDS": str(GLOO_TIMEOUT)})
  assert named is not None, output[-6000:]
  print("stuck rank: named {:.1f} s, launcher exited {:.1f} s after the "
        "freeze".format(named, seconds))
  assert named < STUCK_NAMED, output[-6000:]
  errors = error_lines(output)
  assert len(errors) == 1, output[-6000:]
  assert ("error: on lh1: lost rank 2 of 2 on host lh2 (not answering: "
          "stopped or stuck)" in errors[0]), errors[0]
  # lh2 still has a rank that answers: it keeps its slots.
  assert "relaunch on the remaining hosts (-H lh1:2,lh2:2)" in errors[0]
  assert "]<stderr>:Traceback" not in output
  saved = checkpoint_step(lh1.path(model_dir))
  assert saved >= 20
  assert_checkpoint_intact(lh1.path(model_dir))
  # Nothing of the job stays on either host: the stopped rank's keeper
  # killed it; the keepers end with their ranks.
  wait_for(lambda: not (lh1.processes("legacy_hvd") or
                        lh2.processes("legacy_hvd")),
           GLOO_TIMEOUT + PROBE_AND_EXIT, "every process of the job to end")

  code, output = hostjobs.run(
      test_hosts, 4, ["-H", "lh1:2,lh2:2"], model_dir,
      ["--data_dir=" + data_dir, "--max_steps={}".format(saved + 5)],
      str(tmp_path / "relaunch.log"))
  assert code == 0, output[-6000:]
  assert "Resuming from global step {}".format(saved) in output


def test_a_failing_rank_is_named_once_by_the_others(test_hosts, data_dir,
                                                    tmp_path):
  # An error nobody anticipated, on rank 0 only: its step log is a kernel
  # file that refuses what is written to it (the up-front check cannot
  # know). A full disk is anticipated: test_write_faults.py.
  model_dir = os.path.join(test_hosts.scratch, "failing")
  code, output = hostjobs.run(
      test_hosts, 2, ["-H", "lh1:1,lh2:1"], model_dir,
      ["--data_dir=" + data_dir, "--max_steps=50",
       "--step_log=/proc/self/oom_score_adj"],
      str(tmp_path / "failing.log"))
  assert code != 0
  errors = error_lines(output)
  assert len(errors) == 1, output[-6000:]
  assert errors[0].startswith("[1]<stderr>:legacy_hvd.train: error: on lh2: "
                              "rank 0 on host lh1 failed (see its error); "
                              "the job stops."), errors[0]
  # Rank 0's own error, once; no other rank's traceback.
  assert output.count("]<stderr>:Traceback") == 1, output[-6000:]
  assert output.count("[0]<stderr>:OSError: [Errno 22] Invalid "
                      "argument") == 1, output[-6000:]
  # (TF 1.15's kernels still log the failed op in a warning line.)
  assert not [l for l in output.splitlines()
              if "Horovod has been shut down" in l and "OP_REQUIRES" not in l]
