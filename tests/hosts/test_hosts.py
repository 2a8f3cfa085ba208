"""The main job on two test hosts (2 x 2 ranks), launched from lh1 as a user
would: where each rank runs, who writes what, same numbers as one host, and
one host without the data."""
import json
import os
import time

import pytest

from tests.helpers import hostjobs
from tests.helpers import error_lines


@pytest.fixture(scope="module")
def data_dir(test_hosts):
  return hostjobs.put_data(test_hosts, ["lh1", "lh2"])


def step_log(path):
  with open(path) as f:
    return [json.loads(line) for line in f]


@pytest.mark.one_stack
def test_harness_hosts_are_separate_machines(test_hosts):
  lh1, lh2 = test_hosts.hosts[:2]
  assert lh1.run(["hostname"]).stdout.strip() == "lh1"
  # lh1 reaches lh2 by name over ssh in batch mode, and lh2's scratch disk
  # is its own.
  marker = os.path.join(test_hosts.scratch, "marker")
  process = lh1.run(["ssh", "-o", "BatchMode=yes", "lh2",
                     "hostname; touch " + marker], timeout=60)
  assert process.returncode == 0, process.stderr
  assert process.stdout.strip() == "lh2"
  assert os.path.exists(lh2.path(marker)) and not os.path.exists(
      lh1.path(marker))
  os.remove(lh2.path(marker))


def test_two_hosts_match_one_host_bit_for_bit(test_hosts, data_dir, tmp_path):
  scratch = test_hosts.scratch
  lh1, lh2 = test_hosts.hosts[:2]
  # --deterministic: two runs repeat bit for bit, random augmentation
  # included, whatever hosts the ranks are on.
  args = ["--data_dir=" + data_dir, "--max_steps=12", "--log_every_n_steps=6",
          "--deterministic", "--augment"]
  runs = {}
  for name, np, hosts_args, interface in (
      # 2 hosts x 2 ranks from a hostfile, horovodrun choosing the interface;
      # 1 host x 4 ranks (horovodrun then wants loopback: no interface given).
      ("two_hosts", 4,
       ["-hostfile", test_hosts.hostfile(2, test_hosts.hosts[:2])], None),
      ("one_host", 4, ["-H", "lh1:4"], None)):
    model_dir = os.path.join(scratch, name)
    code, output = hostjobs.run(
        test_hosts, np, hosts_args, model_dir,
        args + ["--step_log={}/{}.jsonl".format(scratch, name)],
        str(tmp_path / (name + ".log")), interface=interface)
    assert code == 0, output[-6000:]
    runs[name] = (output, model_dir)

  output, model_dir = runs["two_hosts"]
  # Every rank's start line: its host, local rank, cross rank, GPU.
  assert hostjobs.start_lines(output) == {
      0: ("lh1", 0, 2, 0, 2, "0"), 1: ("lh1", 1, 2, 0, 2, "1"),
      2: ("lh2", 0, 2, 1, 2, "0"), 3: ("lh2", 1, 2, 1, 2, "1")}
  assert "World: 4 ranks on 2 hosts (lh1: ranks 0-1, lh2: ranks 2-3)" in output
  assert "step 12: epoch 0.15, " in output and ", ETA " in output
  # Rank 0 alone wrote the model directory, on its own host's disk.
  with open(os.path.join(lh1.path(model_dir), "results.json")) as f:
    results = json.load(f)
  assert results["world_size"] == 4 and results["weights_in_sync"]
  assert not os.path.exists(lh2.path(model_dir))
  assert not os.path.exists(lh2.path(scratch + "/two_hosts.jsonl"))

  # The same ranks, shards and reduction order: the same bits.
  two = step_log(lh1.path(scratch + "/two_hosts.jsonl"))
  one = step_log(lh1.path(scratch + "/one_host.jsonl"))
  assert [r["loss"] for r in two] == [r["loss"] for r in one]
  assert len(two) == 12
  assert [r.get("weight_digest") for r in two] == [
      r.get("weight_digest") for r in one]
  with open(os.path.join(lh1.path(runs["one_host"][1]), "results.json")) as f:
    assert json.load(f)["weight_digests"] == results["weight_digests"]


@pytest.mark.one_stack
@pytest.mark.parametrize("fault", ["missing", "damaged"])
def test_host_without_good_data_is_one_line_naming_it(test_hosts, data_dir,
                                                      tmp_path, fault):
  lh1, lh2 = test_hosts.hosts[:2]
  subdir = "data_" + fault
  path = hostjobs.put_data(test_hosts, ["lh1"] + (
      ["lh2"] if fault == "damaged" else []), subdir=subdir)
  if fault == "damaged":
    with open(lh2.path(os.path.join(path, "data_batch_2.bin")), "r+b") as f:
      f.truncate(1000)
  model_dir = os.path.join(test_hosts.scratch, "model_" + fault)
  started = time.monotonic()
  code, output = hostjobs.run(
      test_hosts, 4, ["-H", "lh1:2,lh2:2"], model_dir,
      ["--data_dir=" + path, "--max_steps=5"], str(tmp_path / "job.log"),
      timeout=120)
  assert code != 0
  errors = error_lines(output)
  assert len(errors) == 1, output[-6000:]
  assert "error: on lh2: " in errors[0] and path in errors[0]
  assert ("no such file or directory" if fault == "missing"
          else "data_batch_2.bin") in errors[0]
  assert "]<stderr>:Traceback" not in output
  assert time.monotonic() - started < 90
  # Nobody is left waiting on either host, and nothing was written.
  for host in (lh1, lh2):
    assert host.processes("legacy_hvd.train") == {}
  assert not os.path.exists(lh1.path(model_dir))


@pytest.mark.one_stack
def test_harness_cleans_up_after_a_killed_run_and_limits_links():
  if os.geteuid() != 0:
    pytest.skip("test hosts need root (network and mount namespaces)")
  from tools import testhosts
  first = testhosts.Cluster(hosts=2, link="100mbit")
  slot = first.slot
  try:
    first.up()   # and never taken down, as if its process had been killed
    shown = testhosts._sh(["tc", "-n", first.hosts[0].netns, "qdisc", "show",
                           "dev", "eth0"]).stdout
    assert "tbf" in shown and "100Mbit" in shown
    # While its user lives, the slot is its user's alone.
    with pytest.raises(testhosts.HarnessError, match="in use"):
      testhosts.Cluster(hosts=1, slot=slot).up()
    assert first.hosts[0].run(["hostname"]).stdout.strip() == "lh1"
    # Killed, its user releases the slot's lock (the kernel closes the file).
    first._lock.close()
    first._lock = None
    again = testhosts.Cluster(hosts=1, slot=slot)
    again.up()   # removes what the first left, then comes up
    assert again.hosts[0].run(["hostname"]).stdout.strip() == "lh1"
    again.down()
  finally:
    first.down()
  names = testhosts._sh(["ip", "netns", "list"]).stdout
  links = testhosts._sh(["ip", "-o", "link", "show"]).stdout
  prefix = "{}{}-".format(testhosts.PREFIX, slot)
  assert prefix not in names and prefix not in links
  assert not os.path.exists(testhosts.state_dir(slot))
