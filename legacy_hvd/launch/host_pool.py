"""Where the supervisor can launch next: the hosts given or discovered, without
those the job lost (for good, as Elastic Horovod blacklists them) or that
refuse a batch-mode ssh login now (for this launch). The first host stays
first: rank 0 owns the model directory. No Horovod, no TensorFlow; Python 3.7.
"""
import concurrent.futures
import subprocess

from legacy_hvd.common import cli
from legacy_hvd.launch import hostlists

# Seconds beyond the connection's own time-out for `true` to run there.
SSH_GRACE = 10


class HostPool(object):

  def __init__(self, hosts, discovery_script, ssh_timeout, ssh_port=None):
    """hosts: [(host, slots)] given with -H or a hostfile, or None when
    `discovery_script` names them."""
    self._hosts = hosts
    self._script = discovery_script
    self._ssh_timeout = ssh_timeout
    self._ssh_port = ssh_port
    self._first = hosts[0][0] if hosts else None
    self.lost = {}     # {host: why}, for the rest of the job

  def candidates(self):
    """[(host, slots)]: the given hosts, or what the script prints now."""
    if self._script is None:
      return list(self._hosts)
    found = hostlists.parse_discovered(self._script, self._discover())
    if self._first is None:
      self._first = found[0][0]
    return found

  def _discover(self):
    try:
      done = subprocess.run([self._script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True,
                            stdin=subprocess.DEVNULL,
                            timeout=self._ssh_timeout + SSH_GRACE)
    except (OSError, subprocess.TimeoutExpired) as e:
      cli.fail("--host_discovery_script={}: cannot run it: {}".format(
          self._script, getattr(e, "strerror", None) or e))
    if done.returncode:
      last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
      cli.fail("--host_discovery_script={}: exit {}: {}".format(
          self._script, done.returncode, last))
    return done.stdout

  def drop(self, lost):
    """Leaves the hosts of `lost` ({host: why}) out from now on."""
    self.lost.update(lost)

  def available(self):
    """([(host, slots)] to launch on, the first host first; {host: why} of the
    candidates unreachable now). Hosts lost earlier are left out silently."""
    hosts = [(h, s) for h, s in self.candidates() if h not in self.lost]
    left_out = {}
    with concurrent.futures.ThreadPoolExecutor(max(1, len(hosts))) as pool:
      reasons = list(pool.map(self.unreachable, [h for h, _ in hosts]))
    for (host, _), why in zip(hosts, reasons):
      if why:
        left_out[host] = why
    hosts = [(h, s) for (h, s), why in zip(hosts, reasons) if not why]
    hosts.sort(key=lambda item: item[0] != self._first)   # stable
    return hosts, left_out

  def unreachable(self, host):
    """None if `host` takes a batch-mode ssh login now (or is this machine,
    where horovodrun needs none), else why not."""
    if hostlists.is_local(host):
      return None
    argv = hostlists.ssh_command(host, self._ssh_timeout, self._ssh_port)
    try:
      done = subprocess.run(argv + ["true"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True,
                            stdin=subprocess.DEVNULL,
                            timeout=self._ssh_timeout + SSH_GRACE)
    except subprocess.TimeoutExpired:
      return "no ssh login within {} s".format(self._ssh_timeout + SSH_GRACE)
    if done.returncode == 0:
      return None
    last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
    return "ssh in batch mode failed: " + last
