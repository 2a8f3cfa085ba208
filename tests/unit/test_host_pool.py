"""legacy_hvd.launch.host_pool: the supervisor's hosts for its next launch. The
hosts here are this machine's own names (no ssh needed), and 127.0.0.2
with ssh on port 1, which refuses at once."""
import pytest

from legacy_hvd.launch import host_pool

# Two names of this machine: horovodrun needs no ssh login for them.
LOCAL, ALSO_LOCAL = "localhost", "127.0.0.1"
# Not an address of this machine's interfaces: probed by ssh, refused.
REFUSING = "127.0.0.2"


def pool(hosts, script=None):
  return host_pool.HostPool(hosts, script, ssh_timeout=5, ssh_port=1)


def test_reachable_hosts_in_the_order_given():
  hosts = [(LOCAL, 2), (ALSO_LOCAL, 1)]
  assert pool(hosts).available() == (hosts, {})


def test_a_host_without_an_ssh_login_is_left_out_of_this_launch_only():
  given = pool([(REFUSING, 1), (LOCAL, 2)])
  for _ in range(2):   # asked again next time: it may be back
    hosts, unreachable = given.available()
    assert hosts == [(LOCAL, 2)]
    assert list(unreachable) == [REFUSING]
    assert unreachable[REFUSING].startswith("ssh in batch mode failed: ")
    assert "Connection refused" in unreachable[REFUSING]
  assert given.lost == {}


def test_a_lost_host_is_left_out_for_the_rest_of_the_job():
  given = pool([(LOCAL, 2), (ALSO_LOCAL, 1)])
  given.drop({ALSO_LOCAL: "process ended"})
  assert given.available() == ([(LOCAL, 2)], {})
  assert given.available() == ([(LOCAL, 2)], {})
  assert given.lost == {ALSO_LOCAL: "process ended"}
  assert given.candidates() == [(LOCAL, 2), (ALSO_LOCAL, 1)]


def discovery_script(tmp_path, *outputs):
  """A host-discovery script printing outputs[0] on its first run,
  outputs[1] on its second, ..."""
  for i, output in enumerate(outputs):
    (tmp_path / f"out{i}").write_text(output)
  script = tmp_path / "discover.sh"
  script.write_text(
      "#!/bin/sh\n"
      f"cd {tmp_path}\n"
      "n=$(cat count 2>/dev/null || echo 0)\n"
      "echo $((n + 1)) > count\n"
      "cat out$n\n")
  script.chmod(0o755)
  return str(script)


def test_the_first_discovered_host_stays_first_while_it_remains(tmp_path):
  # It runs rank 0, which owns the model directory.
  script = discovery_script(tmp_path, f"{LOCAL}:1\n{ALSO_LOCAL}:2\n",
                            f"{ALSO_LOCAL}:2\n{LOCAL}:1\n",
                            f"{ALSO_LOCAL}:4\n")
  discovered = pool(None, script)
  assert discovered.available() == ([(LOCAL, 1), (ALSO_LOCAL, 2)], {})
  assert discovered.available() == ([(LOCAL, 1), (ALSO_LOCAL, 2)], {})
  assert discovered.available() == ([(ALSO_LOCAL, 4)], {})


def test_a_failing_discovery_script_is_one_line(tmp_path, capsys):
  script = tmp_path / "discover.sh"
  script.write_text("#!/bin/sh\necho starting\necho 'no scheduler' >&2\n"
                    "exit 3\n")
  script.chmod(0o755)
  with pytest.raises(SystemExit) as exited:
    pool(None, str(script)).available()
  assert exited.value.code == 1
  lines = capsys.readouterr().err.splitlines()
  assert len(lines) == 1 and lines[0].endswith(
      f": error: --host_discovery_script={script}: exit 3: no scheduler")
