"""The launcher side's shared pieces, in-process: the atomic JSON write,
the host flags, the signal recorder; and that the launchers import no
TensorFlow."""
import errno
import json
import os
import signal
import subprocess
import sys

from absl import flags
import pytest

from flags import hosts as hosts_flags
from flags import preflight as preflight_flags
from flags import supervise as supervise_flags
from legacy_hvd.common import json_files
from legacy_hvd.common import signals
from legacy_hvd.faults import failed_writes
from tests.helpers import REPO


def test_a_json_file_is_written_whole(tmp_path):
  path = str(tmp_path / "results.json")
  assert json_files.write_json(path, {"b": 1, "a": [2]}) == path
  with open(path) as f:
    assert f.read() == '{\n  "a": [\n    2\n  ],\n  "b": 1\n}\n'
  json_files.write_json(path, {"c": 3})
  with open(path) as f:
    assert json.load(f) == {"c": 3}
  assert os.listdir(str(tmp_path)) == ["results.json"]


def test_a_failed_json_write_leaves_no_temporary_file(tmp_path):
  # The rename fails (a directory stands at the path), after the temporary
  # file was written in full.
  path = tmp_path / "results.json"
  path.mkdir()
  with pytest.raises(OSError) as failed:
    json_files.write_json(str(path), {"a": 1})
  assert failed.value.errno == errno.EISDIR
  assert failed_writes.written_name(failed.value.filename) == str(path)
  assert os.listdir(str(tmp_path)) == ["results.json"]


def test_a_failed_write_is_named_after_its_file(tmp_path):
  path = str(tmp_path / "gone" / "results.json")
  with pytest.raises(OSError) as failed:
    json_files.write_json(path, {"a": 1})
  assert failed_writes.written_name(failed.value.filename) == path


def test_write_faults_knows_the_temporary_name():
  assert failed_writes.written_name("/m/world.json.tmp-4242") == "/m/world.json"


def parse(define, *args):
  values = flags.FlagValues()
  define(values)
  values(["prog", *args])
  return values


def test_the_launchers_share_one_set_of_host_flags():
  preflight = parse(preflight_flags.define_preflight, "-H", "lh1:2")
  supervise = parse(supervise_flags.define_supervise, "-H", "lh1:2")
  shared = ("hosts", "hostfile", "network_interface", "ssh_timeout",
            "ssh_port")
  for name in shared:
    assert preflight[name].help == supervise[name].help, name
    assert preflight[name].default == supervise[name].default, name
  assert preflight.ssh_timeout == hosts_flags.SSH_TIMEOUT == 10


@pytest.mark.parametrize("define,args,message", [
    (preflight_flags.define_preflight, [], "exactly one of -H/--hosts and "
     "--hostfile"),
    (supervise_flags.define_supervise, ["-H", "a:1", "--hostfile=f"],
     "exactly one of -H/--hosts, --hostfile and --host_discovery_script"),
    (supervise_flags.define_supervise, ["-H", "a:1", "--ssh_timeout=0"],
     "--ssh_timeout must be a positive integer"),
])
def test_bad_host_flags_are_rejected(define, args, message):
  with pytest.raises(flags.IllegalFlagValueError, match=message):
    parse(define, *args)


class Forwarded(signals.Recorder):

  def __init__(self):
    super().__init__((signal.SIGUSR1, signal.SIGUSR2))
    self.reacted = []

  def react(self, signum):
    self.reacted.append((signum, self.first))


def test_the_recorder_records_each_signal_and_reacts_first():
  before = {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGUSR2)}
  try:
    received = Forwarded().install()
    assert (received.first, received.seen) == (0, set())
    os.kill(os.getpid(), signal.SIGUSR2)
    os.kill(os.getpid(), signal.SIGUSR1)
    os.kill(os.getpid(), signal.SIGUSR2)
  finally:
    for signum, handler in before.items():
      signal.signal(signum, handler)
  assert received.first == signal.SIGUSR2
  assert received.seen == {signal.SIGUSR1, signal.SIGUSR2}
  # react() sees what came before the signal it is given.
  assert received.reacted == [(signal.SIGUSR2, 0),
                              (signal.SIGUSR1, signal.SIGUSR2),
                              (signal.SIGUSR2, signal.SIGUSR2)]


def test_the_launchers_pass_a_hang_up_on_as_a_stop():
  # A rank takes no SIGHUP (it would die of it): its launcher's session gone
  # is a stop request like SIGTERM; the stop signals go on as they came.
  assert signal.SIGHUP in signals.LAUNCHER_HANDLED
  assert signals.passed_on(signal.SIGHUP) == signal.SIGTERM
  assert [signals.passed_on(s) for s in signals.HANDLED] == list(
      signals.HANDLED)


def test_a_trainers_stop_request_is_the_first_signal():
  before = signal.getsignal(signal.SIGTERM)
  try:
    stop = signals.StopSignals()
    stop.signums = (signal.SIGTERM,)
    stop.install()
    assert stop.requested == 0
    os.kill(os.getpid(), signal.SIGTERM)
    os.kill(os.getpid(), signal.SIGTERM)   # the same request again
  finally:
    signal.signal(signal.SIGTERM, before)
  assert stop.requested == signal.SIGTERM
  assert stop.exit_code() == 143
  assert signals.StopSignals().exit_code() == 143


def test_every_rank_exits_for_the_signal_the_ranks_agreed_on():
  # Rank 1 got Slurm's warning, rank 2 a SIGTERM, rank 0 nothing yet: the
  # agreement (their requests averaged) stops all three for the SIGTERM,
  # srun's verdict had each got its own; rank 0's signal, coming after the
  # agreement, changes nothing.
  ranks = [signals.StopSignals() for _ in range(3)]
  ranks[1].first, ranks[2].first = signal.SIGUSR1, signal.SIGTERM
  requests = [rank.request() for rank in ranks]
  assert requests[0] == [0.0, 0.0, 0.0]
  agreement = [sum(parts) / 3 for parts in zip(*requests)]
  ranks[0].first = signal.SIGINT
  assert all(rank.agree(agreement) for rank in ranks)
  assert [rank.exit_code() for rank in ranks] == [143, 143, 143]
  # Nobody asked: go on; a later agreement of none keeps what was agreed.
  going_on = signals.StopSignals()
  assert not going_on.agree([0.0, 0.0, 0.0])
  assert ranks[1].agree([0.0, 0.0, 0.0]) and ranks[1].exit_code() == 143
  # The warning alone: rank 0, stopped by rank 1's, exits 138 as rank 1.
  warned = signals.StopSignals()
  warned.first = signal.SIGUSR1
  rank0 = signals.StopSignals()
  assert rank0.agree([0.0, 0.5, 0.0]) and warned.agree([0.0, 0.5, 0.0])
  assert rank0.exit_code() == warned.exit_code() == 138


def test_the_launchers_import_no_tensorflow():
  code = ("import sys; from legacy_hvd.launch import supervise, slurm, preflight; "
          "from legacy_hvd.launch import run_outcome; from legacy_hvd.common import json_files; "
          "print(sorted(m for m in ('tensorflow', 'horovod') "
          "if m in sys.modules))")
  done = subprocess.run([sys.executable, "-c", code], cwd=REPO,
                        stdout=subprocess.PIPE, universal_newlines=True,
                        check=True, timeout=60)
  assert done.stdout.strip() == "[]"


def test_a_stop_signal_after_main_returned_changes_nothing():
  # A warning while a finished rank exits (its handlers gone, TensorFlow's
  # teardown taking seconds) killed it by the signal: its launcher took
  # the finished job for a lost rank. Here it comes from atexit.
  code = ("import atexit, os, signal; from legacy_hvd.common import cli\n"
          "def main(argv):\n"
          "  atexit.register(os.kill, os.getpid(), signal.SIGUSR1)\n"
          "  print('done', flush=True)\n"
          "cli.run(main)\n")
  done = subprocess.run([sys.executable, "-c", code], cwd=REPO,
                        stdout=subprocess.PIPE, universal_newlines=True)
  assert (done.returncode, done.stdout) == (0, "done\n")


@pytest.fixture
def child():
  """A process standing for the one a launcher signals (srun, horovodrun):
  it prints the name of the first stop signal it gets and exits 0. This
  process's own handlers are put back after the test."""
  process = subprocess.Popen([sys.executable, "-c", (
      "import signal, sys, time\n"
      "def say(signum, frame):\n"
      "  print(signal.Signals(signum).name, flush=True); sys.exit(0)\n"
      "for signum in (signal.SIGTERM, signal.SIGUSR1):\n"
      "  signal.signal(signum, say)\n"
      "print('ready', flush=True); time.sleep(30)\n")],
      stdout=subprocess.PIPE, universal_newlines=True)
  before = {s: signal.getsignal(s) for s in signals.LAUNCHER_HANDLED}
  assert process.stdout.readline() == "ready\n"
  yield process
  for signum, handler in before.items():
    signal.signal(signum, handler)
  process.kill()


def test_the_slurm_launcher_takes_a_persons_stop_over_a_warning(child):
  # `scancel --batch --signal=INT` (or HUP): a person's stop. srun gets
  # SIGUSR1, as for the warning (a SIGTERM would make it end its tasks at
  # once, and its own SIGINT only prints their state): the ranks stop at an
  # agreed step and exit 138, and the job is not requeued, though a warning
  # came first.
  from legacy_hvd.launch import slurm
  received = slurm.Received().install()
  os.kill(os.getpid(), signal.SIGUSR1)
  os.kill(os.getpid(), signal.SIGINT)
  received.started(child)   # the signals came as srun started
  assert child.wait(timeout=10) == 0
  assert child.stdout.read() == "SIGUSR1\n"
  assert received.stop_asked == signal.SIGINT and not received.requeue
  assert slurm.requeue_reason(received, slurm.STOPPED_FOR_REQUEUE, "7") is None


def test_the_supervisor_passes_a_warning_to_horovodrun_as_sigterm(child):
  # horovodrun passes on SIGINT and SIGTERM alone and dies of a SIGUSR1: its
  # ranks would then stop (Horovod's watcher) after it, and the supervisor,
  # gone. The supervisor still exits 138.
  from legacy_hvd.launch import supervise
  stop = supervise.Stop().install()
  stop.job = child
  os.kill(os.getpid(), signal.SIGUSR1)
  assert child.wait(timeout=10) == 0
  assert child.stdout.read() == "SIGTERM\n" and stop.first == signal.SIGUSR1
