"""The processes a run left behind, found on each host by the mark
(LEGACY_HVD_ROUND=<run>.<round>) its launcher put in their environment. A
relaunch waits until they are gone: a rank still exiting holds its GPU's
memory, one still running writes beside the new ones. No Horovod, no
TensorFlow; Python 3.7-compatible."""
import re
import subprocess
import time

from legacy_hvd.common import cli

VARIABLE = cli.ROUND
POLL_SECONDS = 1.0
# Each marked process as "PID COMMAND LINE" (its first 100 characters).
_SCRIPT = (
    "for f in $(grep -lsxzE '{variable}={run}[.][0-9]+' /proc/[0-9]*/environ); "
    "do p=${{f%/environ}}; echo \"${{p#/proc/}} $(tr '\\0' ' ' < $p/cmdline "
    "2>/dev/null | cut -c1-100)\"; done")


def mark(run_id, round_number):
  """The environment variable every process of this round carries."""
  return {VARIABLE: "{}.{}".format(run_id, round_number)}


def script(run_id):
  """The shell command that lists run_id's marked processes on a host."""
  return _SCRIPT.format(variable=VARIABLE, run=re.escape(str(run_id)))


def marked_on(run_id, hosts, command_on):
  """{host: [process lines]} where some remain; command_on(host, command) ->
  the argv that runs it there. A host that does not answer is left out."""
  found = {}
  for host in hosts:
    try:
      out = subprocess.run(command_on(host, script(run_id)),
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           universal_newlines=True, timeout=30).stdout
    except subprocess.TimeoutExpired:
      continue
    processes = [line for line in out.splitlines() if line.strip()]
    if processes:
      found[host] = processes
  return found


def wait_gone(run_id, hosts, command_on, seconds):
  """Waits up to `seconds` until no host holds a marked process of `run_id`;
  {host: [process lines]} of what is left."""
  deadline = time.monotonic() + seconds
  while True:
    left = marked_on(run_id, hosts, command_on)
    if not left or time.monotonic() >= deadline:
      return left
    time.sleep(POLL_SECONDS)


def describe(left):
  """{host: [process lines]} -> "lh2: 1234 python -m ...; 1240 ..."."""
  return "; ".join("{}: {}".format(host, ", ".join(processes))
                   for host, processes in left.items())
