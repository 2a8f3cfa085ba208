"""The pre-flight check on the test hosts: a good set-up, one where every
check fails somewhere (a host unreachable, another Horovod, a hostname
resolving to loopback, no data, an unwritable model dir), and hostfiles
that horovodrun cannot use."""
import os
import sys

import horovod
import pytest

from tests.helpers import hostjobs

pytestmark = pytest.mark.one_stack


def preflight(cluster, *args):
  return cluster.hosts[0].run(
      [sys.executable, "-m", "legacy_hvd.launch.preflight", *args], timeout=240)


def test_preflight_passes_on_a_good_set_up(test_hosts, tmp_path):
  data_dir = hostjobs.put_data(test_hosts, ["lh1", "lh2"])
  # Launched from lh1, but rank 0 runs on lh2, the first host of the file:
  # the model dir is checked there.
  hostfile = tmp_path / "hosts"
  hostfile.write_text("lh2 slots=2\nlh1 slots=2\n")
  process = preflight(test_hosts, "--hostfile={}".format(hostfile),
                      "--data_dir=" + data_dir,
                      "--model_dir={}/preflight_model".format(
                          test_hosts.scratch), "--network_interface=eth0")
  assert process.returncode == 0, process.stdout + process.stderr
  rows = process.stdout.splitlines()
  assert rows[0].split()[:3] == ["host", "slots", "ssh"]
  for name, host in zip(("lh1", "lh2"), test_hosts.hosts):
    row = next(r for r in rows if r.startswith(name + " "))
    assert (" local " if name == "lh1" else " ok ") in row
    assert horovod.__version__ in row
    assert "{} -> {} (eth0)".format(name, host.address) in row
    assert "ok (20000 train, 2000 test)" in row
    assert row.endswith(" writable" if name == "lh2" else " -"), row
  assert "All 2 hosts ready for 4 ranks." in process.stdout
  # It created nothing.
  for host in test_hosts.hosts[:2]:
    assert not os.path.exists(host.path(test_hosts.scratch +
                                        "/preflight_model"))


@pytest.mark.parametrize("lines, bad, why", [
    # horovodrun: "ValueError: Invalid host input"
    (["lh1 slots=2", "lh2 slots=two"], [2], "the slot count 'two' is not a "
     "number"),
    # horovodrun gives lh1 no rank and rank 0 runs on lh2
    (["lh1 slots=0", "lh2 slots=2"], [1], "zero slots: horovodrun starts no "
     "rank on lh1"),
    # ranks abort in hvd.init() with a Gloo enforce error
    (["lh1 slots=1", "lh2 slots=2", "lh1 slots=1"], [3], "lh1 is listed "
     "twice (also line 1 "),
    # horovodrun: IndexError (it reads every line as a host)
    (["# the hosts", "lh1 slots=2", "", "lh2"], [1, 3, 4], "expected 'host "
     "slots=N'"),
])
def test_preflight_refuses_a_hostfile_horovodrun_cannot_use(
    test_hosts, tmp_path, lines, bad, why):
  hostfile = tmp_path / "hosts"
  hostfile.write_text("\n".join(lines) + "\n")
  process = preflight(test_hosts, "--hostfile={}".format(hostfile))
  assert process.returncode == 1, process.stdout + process.stderr
  errors = process.stderr.splitlines()
  assert len(errors) == len(bad), process.stderr
  for error, number in zip(errors, bad):
    assert error.startswith("legacy_hvd.launch.preflight: error: --hostfile={}: "
                            "line {} {!r}: ".format(hostfile, number,
                                                    lines[number - 1])), error
  assert why in errors[0]
  assert process.stdout == ""   # no host was contacted, no table


def test_preflight_names_every_problem_once(test_hosts, tmp_path):
  lh1, lh2, lh3 = test_hosts.hosts
  data_dir = hostjobs.put_data(test_hosts, ["lh1"], subdir="preflight_data")
  # lh2: another Horovod at the same path, and its name resolving to
  # loopback (Debian's 127.0.1.1 line); lh3: no sshd.
  installed = os.path.join(os.path.dirname(horovod.__file__), "__init__.py")
  other = tmp_path / "horovod_init.py"
  with open(installed) as f:
    other.write_text(f.read().replace(horovod.__version__, "0.27.0"))
  lh2.bind(str(other), installed)
  lh2.resolve_own_name_to("127.0.1.1")
  lh3.stop_sshd()
  # lh1 (rank 0's host): the model dir's parent is a file there.
  not_a_dir = test_hosts.scratch + "/not_a_dir"
  with open(lh1.path(not_a_dir), "w") as f:
    f.write("a file")
  try:
    process = preflight(test_hosts, "-H", "lh1:2,lh2:2,lh3:2",
                        "--data_dir=" + data_dir,
                        "--model_dir={}/model".format(not_a_dir),
                        "--network_interface=eth0")
  finally:
    lh3.start_sshd()
    lh2.resolve_own_name_to(lh2.address)
    lh2.unbind(installed)
  assert process.returncode == 1, process.stdout + process.stderr
  errors = [l for l in process.stderr.splitlines() if ": error: " in l]
  expected = [
      "lh1: --model_dir={0}/model: {0} is a file".format(not_a_dir),
      "lh2: Horovod 0.27.0, but lh1 has {}".format(horovod.__version__),
      "lh2: its hostname lh2 resolves to 127.0.1.1, not to an address of "
      "eth0 ({})".format(lh2.address),
      "lh2: " + data_dir,
      "lh3: not reachable: ssh in batch mode failed",
  ]
  assert len(errors) == len(expected), process.stderr
  for want in expected:
    assert sum(want in e for e in errors) == 1, (want, errors)
  table = process.stdout
  assert "lh3" in table and "FAILED" in table

