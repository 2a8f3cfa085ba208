"""Runs a trainer under horovodrun and relaunches it when a host is lost.

    python -m legacy_hvd.supervise -H lh1:1,lh2:1,lh3:1 --min_np=2 \\
        --max_restarts=3 -- python -m legacy_hvd.train --model_dir=DIR ...
    python -m legacy_hvd.supervise --hostfile=FILE ... -- COMMAND
    python -m legacy_hvd.supervise --host_discovery_script=S ... -- COMMAND

For clusters without a scheduler to relaunch a job (torchrun's elastic
agent and Elastic Horovod do it for their own jobs; Elastic Horovod does
not work with MonitoredTrainingSession). On the launching host, usually
the first host (rank 0's):
  1. takes the hosts still available: those of -H or the hostfile that take
     an ssh login now, or those the discovery script prints now, less every
     host the job lost (host_pool.py); the first host stays first;
  2. stops if they hold fewer than --min_np slots (exit 75: requeue);
  3. runs `horovodrun --gloo -np <slots> -H <hosts> COMMAND`, passing the
     ranks' output through and reading their lines (run_outcome.py);
  4. when rank 0 wrote results.json in that run: adds the restarts to it
     and exits 0. When the ranks named a lost host or a stuck rank: leaves
     that host out, prints one line (restart k of --max_restarts, what was
     dropped and why, the step it resumes from) and goes back to 1; once
     the restarts are used up it stops (exit 75: requeue). When a rank
     failed on its own error: stops (exit 70; relaunching would meet it
     again). Anything else (the trainer's bad input, say): the job's code.
The trainer itself resumes from its last checkpoint, and adapts the
learning rate, shards and steps per epoch to the new world size.

SIGTERM, SIGINT and SIGUSR1 are passed to horovodrun (the ranks checkpoint
and stop at one agreed step); the supervisor then exits 128+signal and
relaunches nothing. The launcher side: imports no trainer, TensorFlow or
Horovod (it runs horovodrun). Python 3.7-compatible.
"""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from absl import app
from absl import flags

from flags import output as output_flags
from flags import supervise as supervise_flags
from legacy_hvd import checkpoint_state
from legacy_hvd import cli
from legacy_hvd import host_pool
from legacy_hvd import hostlists
from legacy_hvd import run_outcome

FLAGS = flags.FLAGS
PROGRAM = "legacy_hvd.supervise"
REQUEUE = cli.LOST_PEER  # 75, EX_TEMPFAIL: hosts or restarts ran out
RANK_FAILED = 70         # EX_SOFTWARE: a rank's own error; not relaunched
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)
RELAY_SECONDS = 10   # for the output's last lines once horovodrun ended


def say(message):
  print("{}: {}".format(PROGRAM, message), file=sys.stderr, flush=True)


def trainer_model_dir(command):
  """The --model_dir the command gives the trainer (its default if none):
  the flags after `-m MODULE`, or after a console script's name."""
  words = list(command)
  start = words.index("-m") + 2 if "-m" in words else 1
  return output_flags.model_dir_of(words[start:])


def horovodrun():
  """The horovodrun beside this Python (its venv's), else the one on PATH."""
  beside = os.path.join(os.path.dirname(sys.executable), "horovodrun")
  return beside if os.path.exists(beside) else shutil.which("horovodrun")


class Stop(object):
  """A stop signal the supervisor got, passed on to horovodrun."""

  def __init__(self):
    self.signal = None
    self.job = None

  def install(self):
    for signum in FORWARDED:
      signal.signal(signum, self._forward)
    return self

  def _forward(self, signum, frame):
    del frame
    self.signal = self.signal or signum
    if self.job is not None and self.job.poll() is None:
      self.job.send_signal(signum)


def launch(hosts, command, stop):
  """Runs the job on `hosts` to its end, its output passed through;
  (horovodrun's exit code, run_outcome.Lines of what it printed)."""
  # Horovod: Gloo (the supervisor reads the lost-host lines that the
  # trainers print over Gloo); one rank per slot of the hosts left.
  argv = [horovodrun(), "--gloo", "-np", str(slots(hosts)),
          "-H", hostlists.hosts_arg(hosts)]
  # On this host alone horovodrun wants the loopback interface: it is given
  # none (docs/cluster.md).
  if FLAGS.network_interface and not all(hostlists.is_local(host)
                                         for host, _ in hosts):
    argv += ["--network-interface", FLAGS.network_interface]
  if FLAGS.ssh_port:
    argv += ["-p", str(FLAGS.ssh_port)]
  lines = run_outcome.Lines()
  # A session of its own: a Ctrl-C at the terminal reaches horovodrun once,
  # through Stop, not twice (a second SIGINT ends the ranks at once).
  job = subprocess.Popen(argv + list(command), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
  stop.job = job
  relays = [threading.Thread(target=_relay, args=(stream, to, lines),
                             daemon=True)
            for stream, to in ((job.stdout, sys.stdout),
                               (job.stderr, sys.stderr))]
  for relay in relays:
    relay.start()
  code = job.wait()
  for relay in relays:
    # A rank horovodrun could not end would hold the pipe open forever.
    relay.join(RELAY_SECONDS)
  stop.job = None
  return code, lines


def _relay(stream, to, lines):
  for raw in iter(stream.readline, b""):
    text = raw.decode("utf-8", "replace")
    lines.add(text)
    to.write(text)
    to.flush()


def describe(hosts):
  """{host: why} -> "lh2 (rank 1: process ended), lh3 (...)"."""
  return ", ".join("{} ({})".format(h, why) for h, why in hosts.items())


def slots(hosts):
  return sum(s for _, s in hosts)


def ranks(count):
  return "{} rank{}".format(count, "" if count == 1 else "s")


def check_input(command, given):
  """Bad input ends here, before anything starts: one line, exit 2."""
  if not command:
    cli.fail("no command to run: give it after --, e.g. -- python -m "
             "legacy_hvd.train --model_dir=DIR", cli.USAGE_ERROR)
  if given is not None and slots(given) < FLAGS.min_np:
    cli.fail("--min_np={}: the hosts hold only {} slots ({}); expected "
             "--min_np <= the slots given".format(
                 FLAGS.min_np, slots(given), hostlists.hosts_arg(given)),
             cli.USAGE_ERROR)


def main(argv):
  command = argv[1:]
  given = (hostlists.parse_hosts(FLAGS.hosts) if FLAGS.hosts else
           hostlists.parse_hostfile(FLAGS.hostfile) if FLAGS.hostfile else
           None)
  check_input(command, given)
  model_dir = trainer_model_dir(command)
  pool = host_pool.HostPool(given, FLAGS.host_discovery_script,
                            FLAGS.ssh_timeout, FLAGS.ssh_port)
  stop = Stop().install()
  restarts = []
  began = time.monotonic()
  lost = None   # the last run's outcome, while relaunching
  while True:
    hosts, unreachable = pool.available()
    step = checkpoint_state.latest_step(model_dir)
    stop_if_too_few(hosts, unreachable, lost, step, model_dir)
    if lost is None:
      say("{} on {}; {} {} (--max_restarts={}, --min_np={})".format(
          ranks(slots(hosts)), hostlists.hosts_arg(hosts),
          "resuming at step {} in".format(step) if step else "starting in",
          model_dir, FLAGS.max_restarts, FLAGS.min_np))
    else:
      restarts.append(dict(
          restart=len(restarts) + 1, resumed_at_step=step,
          lost=lost.what, dropped=dict(lost.dropped, **unreachable),
          hosts=hostlists.hosts_arg(hosts), np=slots(hosts),
          seconds=round(time.monotonic() - began, 1)))
      say("restart {} of {}: lost {}; relaunching {} on {}{}, resuming at "
          "step {} in {}".format(
              len(restarts), FLAGS.max_restarts, lost.what,
              ranks(slots(hosts)), hostlists.hosts_arg(hosts),
              " (unreachable: {})".format(describe(unreachable))
              if unreachable else "", step, model_dir))
    mark = run_outcome.results_mark(model_dir)
    if not stop.signal:
      code, lines = launch(hosts, command, stop)
    if stop.signal:
      say("stopped by signal {}; relaunching nothing".format(stop.signal))
      sys.exit(128 + stop.signal)
    lost = lines.outcome(code, model_dir, mark)
    end_unless_lost(lost, restarts, model_dir)
    pool.drop(lost.dropped)
    if len(restarts) >= FLAGS.max_restarts:
      cli.fail("lost {}; restart budget used up ({} of --max_restarts={}); "
               "the job stops at step {} in {}: requeue it".format(
                   lost.what, len(restarts), FLAGS.max_restarts,
                   checkpoint_state.latest_step(model_dir), model_dir),
               REQUEUE)


def stop_if_too_few(hosts, unreachable, lost, step, model_dir):
  """Fewer slots than --min_np left: one line, exit 75 (requeue)."""
  if slots(hosts) >= FLAGS.min_np:
    return
  cli.fail("{}only {} left ({}{}), fewer than --min_np={}; the job stops at "
           "step {} in {}: requeue it".format(
               "lost {}; ".format(lost.what) if lost else "",
               ranks(slots(hosts)), hostlists.hosts_arg(hosts) or "no host",
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
  # Not cli.run: it quiets TensorFlow, which this side never imports.
  app.run(main, flags_parser=lambda argv: cli.parse_flags(
      argv, positional_args=True))


if __name__ == "__main__":
  run()
