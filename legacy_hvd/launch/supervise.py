"""Runs a trainer under horovodrun and relaunches it when a host is lost.

    python -m legacy_hvd.launch.supervise -H lh1:1,lh2:1,lh3:1 --min_np=2 \\
        --max_restarts=3 -- python -m legacy_hvd.train --model_dir=DIR ...

For clusters without a scheduler to relaunch a job (Elastic Horovod does not
work with MonitoredTrainingSession): results.json written, exit 0; a host
lost, a relaunch without it, within --max_restarts and --min_np (else exit 75:
requeue); a rank's own error, exit 70. The trainer resumes at the new world
size. Imports no trainer, TensorFlow or Horovod. Python 3.7-compatible."""
import os
import shutil
import signal
import socket
import sys
import time

from absl import flags

import flags as trainer_flags
from flags import output as output_flags
from flags import supervise as supervise_flags
from legacy_hvd.common import checkpoint_state
from legacy_hvd.common import cli
from legacy_hvd.common import signals
from legacy_hvd.launch import host_pool
from legacy_hvd.launch import hostlists
from legacy_hvd.launch import leftovers
from legacy_hvd.launch import run_outcome
from legacy_hvd.launch import writable

FLAGS = flags.FLAGS
PROGRAM = "legacy_hvd.launch.supervise"
REQUEUE = cli.LOST_PEER  # 75, EX_TEMPFAIL: hosts or restarts ran out
RANK_FAILED = 70         # EX_SOFTWARE: a rank's own error; not relaunched
FORWARDED = signals.LAUNCHER_HANDLED   # SIGTERM, SIGINT, SIGUSR1, SIGHUP
LEFTOVER_SECONDS = 90   # for the last run's processes to be gone


def say(message):
  print("{}: {}".format(PROGRAM, message), file=sys.stderr, flush=True)


def split_command(command):
  """(what the command runs: the module after `-m`, else the program's
  name; the arguments it gives it)."""
  words = list(command)
  if "-m" in words[:-1]:
    at = words.index("-m") + 1
    return words[at], words[at + 1:]
  return (os.path.basename(words[0]) if words else None), words[1:]


def trainer_model_dir(command):
  """The --model_dir the command gives the trainer (its default if none)."""
  return output_flags.model_dir_of(split_command(command)[1])


def horovodrun():
  """The horovodrun beside this Python (its venv's), else the one on PATH."""
  beside = os.path.join(os.path.dirname(sys.executable), "horovodrun")
  return beside if os.path.exists(beside) else shutil.which("horovodrun")


class Stop(signals.Recorder):
  """The stop signals and SIGHUP, recorded (`first`), passed to horovodrun:
  SIGINT as it came, the others as SIGTERM (horovodrun passes on those two
  alone; it dies of a SIGUSR1, its ranks then stopping after it is gone)."""

  def __init__(self):
    super().__init__(FORWARDED)
    self.job = None

  def react(self, signum):
    if self.job is not None and self.job.poll() is None:
      self.job.send_signal(signum if signum == signal.SIGINT
                           else signal.SIGTERM)


def launch(hosts, command, stop, env):
  """Runs the job on `hosts` to its end, output passed through, `env` to every
  rank; (horovodrun's exit code, run_outcome.Lines)."""
  # Horovod: Gloo (the supervisor reads the lost-host lines that the
  # trainers print over Gloo); one rank per slot of the hosts left.
  argv = [horovodrun(), "--gloo", "-np", str(hostlists.slot_count(hosts)),
          "-H", hostlists.hosts_arg(hosts)]
  # On this host alone horovodrun wants the loopback interface: it is given
  # none (docs/cluster.md).
  if FLAGS.network_interface and not all(hostlists.is_local(host)
                                         for host, _ in hosts):
    argv += ["--network-interface", FLAGS.network_interface]
  if FLAGS.ssh_port:
    argv += ["-p", str(FLAGS.ssh_port)]
  # A session of its own: a Ctrl-C at the terminal reaches horovodrun once,
  # through Stop, not twice (a second SIGINT ends the ranks at once).
  code, lines = run_outcome.run_reading(
      argv + list(command), lambda job: setattr(stop, "job", job),
      start_new_session=True, env=env)
  stop.job = None
  return code, lines


def describe(hosts):
  """{host: why} -> "lh2 (rank 1: process ended), lh3 (...)"."""
  return ", ".join("{} ({})".format(h, why) for h, why in hosts.items())


def ranks(hosts):
  """[(host, slots)] -> "2 ranks"."""
  count = hostlists.slot_count(hosts)
  return "{} rank{}".format(count, "" if count == 1 else "s")


def trainer_of(command):
  """(the legacy_hvd trainer `command` runs, its arguments) or (None, None)."""
  name, args = split_command(command)
  scripts = {"legacy-hvd-" + module.split(".")[1].replace("_", "-"): module
             for module in trainer_flags.TRAINERS}
  module = name if name in trainer_flags.TRAINERS else scripts.get(name)
  return (module, args) if module else (None, None)


def check_input(command, given):
  """Bad input (the trainer's flags judged as the trainer would) ends here,
  before anything starts: one line, exit 2."""
  if not command:
    cli.fail("no command to run: give it after --, e.g. -- python -m "
             "legacy_hvd.train --model_dir=DIR", cli.USAGE_ERROR)
  module, args = trainer_of(command)
  if module:
    try:
      trainer_flags.parse_trainer_flags(module, args)
    except flags.Error as e:
      cli.fail("{}: {}; nothing was started".format(module, e),
               cli.USAGE_ERROR)
  if given is not None and hostlists.slot_count(given) < FLAGS.min_np:
    cli.fail("--min_np={}: the hosts hold only {} slots ({}); expected "
             "--min_np <= the slots given".format(
                 FLAGS.min_np, hostlists.slot_count(given),
                 hostlists.hosts_arg(given)),
             cli.USAGE_ERROR)


def main(argv):
  command = argv[1:]
  given = (hostlists.parse_hosts(FLAGS.hosts) if FLAGS.hosts else
           hostlists.parse_hostfile(FLAGS.hostfile) if FLAGS.hostfile else
           None)
  check_input(command, given)
  model_dir = trainer_model_dir(command)
  # Horovod: rank 0 on the first host (its model directory), horovodrun here.
  writable.require(model_dir if given and hostlists.is_local(given[0][0])
                   else None, horovodrun=True)
  pool = host_pool.HostPool(given, FLAGS.host_discovery_script,
                            FLAGS.ssh_timeout, FLAGS.ssh_port)
  stop = Stop().install()
  restarts = []
  began = time.monotonic()
  lost = None   # the last run's outcome, while relaunching
  # Every process of a run carries this mark (leftovers.py): a relaunch
  # waits until none of the last run's is left on any host it used.
  run_id = "{}-{}".format(socket.gethostname(), os.getpid())
  used = []
  while True:
    if used:
      wait_for_leftovers(run_id, used)
    hosts, unreachable = pool.available()
    step = checkpoint_state.latest_step(model_dir)
    stop_if_too_few(hosts, unreachable, lost, step, model_dir)
    if lost is None:
      say("{} on {}; {} {} (--max_restarts={}, --min_np={})".format(
          ranks(hosts), hostlists.hosts_arg(hosts),
          "resuming at step {} in".format(step) if step else "starting in",
          model_dir, FLAGS.max_restarts, FLAGS.min_np))
    else:
      restarts.append(dict(
          restart=len(restarts) + 1, resumed_at_step=step,
          lost=lost.what, dropped=dict(lost.dropped, **unreachable),
          hosts=hostlists.hosts_arg(hosts), np=hostlists.slot_count(hosts),
          seconds=round(time.monotonic() - began, 1)))
      say("restart {} of {}: lost {}; relaunching {} on {}{}, resuming at "
          "step {} in {}".format(
              len(restarts), FLAGS.max_restarts, lost.what,
              ranks(hosts), hostlists.hosts_arg(hosts),
              " (unreachable: {})".format(describe(unreachable))
              if unreachable else "", step, model_dir))
    mark = run_outcome.results_mark(model_dir)
    if stop.first:
      stopped(stop)
    used = [host for host, _ in hosts]
    code, lines = launch(hosts, command, stop, dict(
        os.environ, **leftovers.mark(run_id, len(restarts)),
        **{cli.DECIDER: PROGRAM}))
    lost = lines.outcome(code, model_dir, mark)
    if stop.first and lost.kind != run_outcome.TRAINED:   # else: too late
      stopped(stop)
    end_unless_lost(lost, restarts, model_dir)
    pool.drop(lost.dropped)
    if len(restarts) >= FLAGS.max_restarts:
      cli.fail("lost {}; restart budget used up ({} of --max_restarts={}); "
               "the job stops at step {} in {}: requeue it".format(
                   lost.what, len(restarts), FLAGS.max_restarts,
                   checkpoint_state.latest_step(model_dir), model_dir),
               REQUEUE)


def stopped(stop):
  """Ends the supervisor for the signal it passed on: nothing relaunched."""
  say("stopped by signal {}; relaunching nothing".format(stop.first))
  sys.exit(128 + stop.first)


def wait_for_leftovers(run_id, hosts):
  """Waits until no process of the last run is left on `hosts` (those taking an
  ssh login now); one line, exit 75, if some remain after LEFTOVER_SECONDS."""
  def command_on(host, command):
    if hostlists.is_local(host):
      return ["sh", "-c", command]
    return hostlists.ssh_command(host, FLAGS.ssh_timeout,
                                 FLAGS.ssh_port) + [command]
  left = leftovers.wait_gone(run_id, hosts, command_on, LEFTOVER_SECONDS)
  if left:
    cli.fail("processes of the last run still running after {} s: {}; not "
             "relaunched: end them, then run the same command to "
             "resume".format(LEFTOVER_SECONDS, leftovers.describe(left)),
             REQUEUE)


def stop_if_too_few(hosts, unreachable, lost, step, model_dir):
  """Fewer slots than --min_np left: one line, exit 75 (requeue)."""
  if hostlists.slot_count(hosts) >= FLAGS.min_np:
    return
  cli.fail("{}only {} left ({}{}), fewer than --min_np={}; the job stops at "
           "step {} in {}: requeue it".format(
               "lost {}; ".format(lost.what) if lost else "",
               ranks(hosts), hostlists.hosts_arg(hosts) or "no host",
               "; unreachable: " + describe(unreachable) if unreachable
               else "", FLAGS.min_np, step, model_dir), REQUEUE)


def end_unless_lost(outcome, restarts, model_dir):
  """Ends the supervisor unless the run lost a host or a rank: 0 when it
  trained (the restarts recorded), else the exit code of why not."""
  if outcome.kind == run_outcome.TRAINED:
    path = run_outcome.record_restarts(model_dir, restarts)
    say("trained after {} restart{}{}".format(
        len(restarts), "" if len(restarts) == 1 else "s",
        "; listed in " + path if path else
        " (results.json is not visible here: not listed)"))
    sys.exit(0)
  if outcome.kind == run_outcome.FAILED:
    cli.fail("a rank failed on its own error (the lines above); not "
             "relaunched: it would fail again", RANK_FAILED)
  if outcome.kind == run_outcome.OTHER:
    if outcome.code in (0, REQUEUE):   # no line says why: no known loss
      cli.fail("the job ended (exit {}) without results.json and without "
               "naming a lost host; not relaunched".format(outcome.code),
               RANK_FAILED)
    sys.exit(outcome.code)   # the trainer's own line says why (bad input)


def run():
  """Console-script entry point (legacy-hvd-supervise)."""
  supervise_flags.define_supervise()
  cli.run_launcher(main)


if __name__ == "__main__":
  run()
