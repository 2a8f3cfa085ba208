"""What the network does to the job: the emulated link measured, the job
across two hosts over a slow link, and hostbench's one line for a bad link
(the scaling model's formulas: tests/unit/test_scaling_model.py)."""
import argparse
import subprocess
import sys

import pytest

from tools import hostbench
from tools import linkcheck
from tools import scaling_model as sm

SLOW = "20mbit"      # slow enough that the allreduce dominates a step

pytestmark = pytest.mark.one_stack


@pytest.fixture
def slow_link(test_hosts):
  """lh1 and lh2 on links of SLOW both ways; unlimited again afterwards."""
  hosts = test_hosts.hosts[:2]
  try:
    for host in hosts:
      host.set_rate(SLOW)
    yield hosts
  finally:
    for host in hosts:
      host.set_rate(None)


def test_link_check_measures_the_configured_rate_both_ways(slow_link):
  lh1, lh2 = slow_link
  assert lh1.rate() == "20Mbit"
  result = linkcheck.measure(lh1, lh2, seconds=1.5)
  ceiling = 20 * linkcheck.PAYLOAD_SHARE
  # The promise: the configured rate both ways (as TCP payload; unlimited,
  # the same socket moves thousands of Mbit/s). The floor's margin is for a
  # stall of either end mid-stream on a loaded machine, which closes the
  # receive window and idles the link; the end of the stream no longer
  # counts (linkcheck.py).
  assert 0.7 * ceiling < result["send_mbit"] < 1.1 * ceiling, result
  assert 0.7 * ceiling < result["receive_mbit"] < 1.1 * ceiling, result
  assert 0 < result["rtt_ms"] < 5, result


def test_two_hosts_over_a_slow_link_spend_the_step_on_the_wire(
    test_hosts, slow_link, tmp_path):
  args = argparse.Namespace(warmup=5, steps=15, repo=hostbench.REPO)
  result = hostbench.run_case(test_hosts, "2x1", args, str(tmp_path))
  assert result is not None, "the job did not finish in time"
  # One ring allreduce of the gradients per step: each host sends all of
  # their bytes once (2 (P-1)/P with P=2) at 20 Mbit/s, about 140 ms.
  inputs = sm.Inputs(compute_ms=0.0, overhead_ms=0.0,
                     rounds=sm.fused_rounds(), unfused_rounds=None)
  wire = sm.comm_ms(inputs, 2, 1, sm.Setting(20, 0.0))
  assert 120 < wire < 160
  assert 0.8 * wire < result["comm_ms"] < 1.6 * wire, result
  # Most of the step is the wire (the rest includes Horovod's negotiation,
  # whose messages queue behind the gradients on the same slow link).
  assert result["step_ms"] > result["comm_ms"] > result["compute_ms"], \
      result


def test_a_bad_link_rate_is_one_line(tmp_path):
  process = subprocess.run(
      [sys.executable, hostbench.__file__, "--out", str(tmp_path),
       "--links", "fast"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
      universal_newlines=True, timeout=120)
  assert process.returncode == 2
  assert process.stderr.splitlines()[-1] == (
      "hostbench: error: --links: expected a rate like 100mbit or 1gbit, "
      "or unlimited; got fast")
  assert "Traceback" not in process.stderr
