"""legacy_hvd.launch.hostlists: -H, hostfiles and a discovery script's output read
as horovodrun reads them; what it cannot use is one line per bad item, then
exit (2 for -H, a usage error; 1 for a file or a script's output)."""
import pytest

from legacy_hvd.launch import hostlists


def refused(capsys, parse, *args):
  """(exit code, the error lines) of a parse that refuses its input."""
  with pytest.raises(SystemExit) as exited:
    parse(*args)
  lines = capsys.readouterr().err.splitlines()
  assert all(": error: " in line for line in lines), lines
  return exited.value.code, [line.split(": error: ", 1)[1] for line in lines]


def test_hosts_and_their_slots():
  assert hostlists.parse_hosts("lh1:2,lh2:4") == [("lh1", 2), ("lh2", 4)]
  assert hostlists.parse_hosts("node-1.cluster:1, node_2:8") == [
      ("node-1.cluster", 1), ("node_2", 8)]


def test_hosts_arg_writes_what_parse_hosts_reads():
  hosts = [("lh1", 2), ("lh2", 2), ("10.0.0.7", 1)]
  assert hostlists.hosts_arg(hosts) == "lh1:2,lh2:2,10.0.0.7:1"
  assert hostlists.parse_hosts(hostlists.hosts_arg(hosts)) == hosts


def test_bad_hosts_are_one_line_each_then_a_usage_error(capsys):
  code, lines = refused(capsys, hostlists.parse_hosts, "lh1:x,lh2,lh3:0")
  assert code == 2
  assert lines == [
      "-H lh1:x,lh2,lh3:0: item 'lh1:x': the slot count 'x' is not a "
      "number; expected host:slots with slots >= 1, as horovodrun reads it",
      "-H lh1:x,lh2,lh3:0: item 'lh2': expected host:slots with slots >= 1, "
      "as horovodrun reads it",
      "-H lh1:x,lh2,lh3:0: item 'lh3:0': zero slots: horovodrun starts no "
      "rank on lh3 (and rank 0 would run on another host); expected "
      "host:slots with slots >= 1, as horovodrun reads it"]


def test_a_host_listed_twice_is_refused(capsys):
  code, lines = refused(capsys, hostlists.parse_hosts, "lh1:1,lh2:1,lh1:1")
  assert code == 2
  assert lines == [
      "-H lh1:1,lh2:1,lh1:1: item 'lh1:1': lh1 is listed twice (also item "
      "'lh1:1'): its ranks would collide in hvd.init(); give each host one "
      "entry with all its slots"]


def test_a_hostfile_as_horovodrun_reads_it(tmp_path):
  hostfile = tmp_path / "hosts"
  hostfile.write_text("lh1 slots=2\n  lh2   slots=4  \n")
  assert hostlists.parse_hostfile(str(hostfile)) == [("lh1", 2), ("lh2", 4)]


def test_blank_and_comment_lines_are_hosts_to_horovodrun(tmp_path, capsys):
  hostfile = tmp_path / "hosts"
  hostfile.write_text("# the rack\nlh1 slots=2\n\nlh2 slots=two\n")
  code, lines = refused(capsys, hostlists.parse_hostfile, str(hostfile))
  form = "expected 'host slots=N' with N >= 1, as horovodrun reads it"
  assert code == 1
  assert lines == [
      f"--hostfile={hostfile}: line 1 '# the rack': a comment line: "
      f"horovodrun reads every line as a host; {form}",
      f"--hostfile={hostfile}: line 3 '': a blank line: horovodrun reads "
      f"every line as a host; {form}",
      f"--hostfile={hostfile}: line 4 'lh2 slots=two': the slot count 'two' "
      f"is not a number; {form}"]


def test_a_missing_or_empty_hostfile_is_one_line(tmp_path, capsys):
  missing = tmp_path / "nowhere"
  assert refused(capsys, hostlists.parse_hostfile, str(missing)) == (
      1, [f"--hostfile={missing}: No such file or directory"])
  empty = tmp_path / "empty"
  empty.write_text("")
  assert refused(capsys, hostlists.parse_hostfile, str(empty)) == (
      1, [f"--hostfile={empty}: names no host; expected 'host slots=N' with "
          "N >= 1, as horovodrun reads it"])


def test_a_discovery_scripts_hosts():
  # Elastic Horovod's form: host:slots, or host alone for one slot; blank
  # lines skipped.
  assert hostlists.parse_discovered("discover.sh", "lh1:2\n\nlh2\n") == [
      ("lh1", 2), ("lh2", 1)]


def test_a_discovery_scripts_bad_lines(capsys):
  code, lines = refused(capsys, hostlists.parse_discovered, "d.sh",
                        "lh1:2\nlh2:none\n")
  assert code == 1
  assert lines == [
      "--host_discovery_script=d.sh: line 2 'lh2:none': the slot count "
      "'none' is not a number; expected host:slots (or host: one slot) a "
      "line, as Elastic Horovod reads it"]
  code, lines = refused(capsys, hostlists.parse_discovered, "d.sh", "\n \n",
                        75)
  assert code == 75
  assert lines == ["--host_discovery_script=d.sh: printed no host; expected "
                   "one host:slots a line"]


def test_this_machine_is_local_and_a_foreign_address_is_not():
  assert hostlists.interfaces()["lo"] == "127.0.0.1"
  assert hostlists.is_local("localhost")
  assert hostlists.is_local("127.0.0.1")
  assert not hostlists.is_local("198.51.100.1")   # TEST-NET-2: nobody's
