"""Test hosts: Linux namespaces that are real hosts to Horovod, ssh and mpirun.

    python tools/testhosts.py up [--hosts 2] [--link 100mbit]   # lh1, lh2, ...
    python tools/testhosts.py link [--link 1gbit]   # change every link
    python tools/linkcheck.py                  # the link measured, both ways
    python tools/testhosts.py status
    python tools/testhosts.py down [--all]     # idempotent; also after a killed run

    with Cluster(hosts=2) as cluster:          # Mininet's shape: up, use, down
      lh1, lh2 = cluster.hosts
      lh1.run(["hostname"]).stdout             # 'lh1\\n': a command inside lh1
      lh1.popen(["horovodrun", "-H", "lh1:2,lh2:2", ...])
      lh2.scratch                              # its private disk, seen from outside
    # torn down here, after failures and time-outs too (and by the next `up`
    # when this process was killed)

Each host is what a cluster node is to a job: a network namespace with its
own interface (eth0) and address (198.18.<slot>.<i>/24) on a bridge of its
own that has no address and no route out, so nothing leaves the machine
(198.18.0.0/15 is reserved for network benchmark tests); its own UTS
namespace and hostname (lh<i>) that resolves, through the host's own
/etc/hosts, to its own address; its own mount namespace with a private
scratch directory mounted at the same path on every host (`SCRATCH`: a
node's local disk); and its own sshd accepting root logins with a key the
harness makes. The checkout, the venvs and everything else are shared, the
way clusters share an NFS home. The harness's ssh key, known_hosts and
client config are bind-mounted over /etc/ssh/ssh_config inside the hosts, so
the real ~/.ssh is never read or written.

Why a hostname per host (not Mininet's hosts, which share the machine's):
Horovod 0.28.1 builds the Gloo contexts of its process sets on the
interface found from the machine's hostname, whatever --network-interface
says; with one hostname (resolving to 127.x) on every host, ranks on
different hosts try to connect to 127.0.0.1 and fail.

Jobs must be launched from inside a host (`nsenter`, which Host.popen uses,
or ssh): horovodrun advertises its rendezvous server on an interface of the
namespace it runs in, and the root namespace has none the hosts can reach.

Slots: several clusters can be up at once (the TF 2 and TF 1.15 suites run
side by side), each with its own bridge, subnet and state directory. The
command line uses slot 0 (or --slot N); the test fixture takes the first
free slot from 1 on. Every user of a slot holds its lock (a `flock` on
slot-N.lock) before touching it: `up` refuses a slot another user holds
instead of tearing it down. The command line's hosts outlive `up`, so
their anchor processes inherit the lock and hold it until `down`; a test
session holds it itself, so the next session removes what a killed one
left. Needs root, `ip`, `unshare`,
`nsenter` and Debian's openssh-server (installed with apt-get when missing).
Python 3.7-compatible: the TF 1.15 suite imports it too.
"""
import argparse
import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATE_ROOT = "/tmp/legacy-hvd-testhosts"
SUBNET = "198.18.{slot}.0/24"   # inside 198.18.0.0/15, one /24 per slot
PREFIX = "lhvd"                 # every interface and namespace name we make
MAX_SLOT = 63
INTERFACE = "eth0"              # each host's interface, the same name on all
SSHD = "/usr/sbin/sshd"
SSH_PACKAGE = "openssh-server"
POLICY_RC_D = "/usr/sbin/policy-rc.d"
READY_SECONDS = 20              # for a namespace or an sshd to come up
APT_LOCK_SECONDS = 300          # apt-get waits this long for dpkg's lock
APT_TRIES = 3
# tbf's bucket: what passes at full speed after an idle moment. Small, like
# a switch port's buffer: a 128 KB bucket let a third of each step's
# gradients (330 KB) through unshaped. max(16 KB, 0.25 ms of the rate):
# measured with tools/linkcheck.py, 95.3-95.7 of 95.6 Mbit/s TCP payload
# at 100mbit, 936-939 of 956 at 1gbit (a 16 KB bucket there: 930).
LINK_BURST_BYTES = 16 * 1024
LINK_BURST_SECONDS = 0.00025
LINK_QUEUE = "50ms"             # tbf: longest a packet may wait in the queue


class SlotBusy(Exception):
  """Another user holds the slot's lock."""


class HarnessError(Exception):
  """The hosts cannot be brought up here; str() is the one-line reason."""


def _sh(argv, check=True, **kwargs):
  process = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True,
                           **kwargs)
  if check and process.returncode:
    raise HarnessError("{} failed (exit {}): {}".format(
        " ".join(argv), process.returncode, process.stderr.strip()))
  return process


def address(slot, index):
  return "198.18.{}.{}".format(slot, index)


def state_dir(slot):
  return os.path.join(STATE_ROOT, str(slot))


def scratch_path(slot):
  """Where every host of `slot` sees its own private scratch directory."""
  return os.path.join(state_dir(slot), "scratch")


def netns_name(slot, index):
  return "{}{}-lh{}".format(PREFIX, slot, index)


def ensure_prerequisites():
  """Root, the tools, and sshd (installed with apt-get when root lacks it)."""
  if os.geteuid() != 0:
    raise HarnessError("test hosts need root (network and mount namespaces)")
  for tool in ("ip", "unshare", "nsenter", "ssh", "ssh-keygen"):
    if not shutil.which(tool):
      raise HarnessError("{} is missing; install iproute2, util-linux and "
                         "openssh-client".format(tool))
  # The package would start the machine's own sshd on its real interfaces.
  install_packages([SSH_PACKAGE], [SSHD], "testhosts")


def install_packages(packages, binaries, program):
  """Debian's `packages`, installed with apt-get unless every one of
  `binaries` exists, without starting their services on the machine:
  Debian's policy-rc.d (exit 101: "do not start services") forbids it.
  apt-get waits for another apt or dpkg holding its lock (one starting
  with the machine, say), and is tried APT_TRIES times; HarnessError with
  apt-get's own last line if the binaries are still missing."""
  if all(os.path.exists(b) for b in binaries):
    return
  if not shutil.which("apt-get"):
    raise HarnessError("{} missing; install {}".format(
        ", ".join(binaries), " ".join(packages)))
  print("{}: installing {} with apt-get".format(program, " ".join(packages)),
        file=sys.stderr, flush=True)
  env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
  wait = ["-o", "DPkg::Lock::Timeout={}".format(APT_LOCK_SECONDS)]
  own_policy = not os.path.exists(POLICY_RC_D)
  if own_policy:
    with open(POLICY_RC_D, "w") as f:
      f.write("#!/bin/sh\n# tools/{}.py, while installing {}\nexit 101\n"
              .format(program, " ".join(packages)))
    os.chmod(POLICY_RC_D, 0o755)
  try:
    for _ in range(APT_TRIES):
      _sh(["apt-get", *wait, "update", "-qq"], check=False)
      process = _sh(["apt-get", *wait, "install", "-y", "-qq",
                     "--no-install-recommends", *packages],
                    check=False, env=env)
      if not process.returncode and all(os.path.exists(b) for b in binaries):
        return
      time.sleep(5)
  finally:
    if own_policy:
      os.remove(POLICY_RC_D)
  said = (process.stderr.strip() or process.stdout.strip()).splitlines()
  raise HarnessError("installing {} failed ({}); run: apt-get install {}"
                     .format(" ".join(packages),
                             said[-1] if said else
                             "exit {}".format(process.returncode),
                             " ".join(packages)))


class Host:
  """One test host: run commands in it, change its disk or its link."""

  def __init__(self, cluster, index):
    self.cluster = cluster
    self.index = index
    self.name = "lh{}".format(index)
    self.address = address(cluster.slot, index)
    self.netns = netns_name(cluster.slot, index)
    self.veth = "{}{}-v{}".format(PREFIX, cluster.slot, index)  # the switch port
    self.dir = os.path.join(cluster.dir, self.name)
    # This host's private scratch disk, as the root namespace sees it.
    self.scratch = os.path.join(self.dir, "scratch")
    self.hosts_file = os.path.join(self.dir, "hosts")
    self.anchor = None   # pid of the process holding the UTS and mount ns
    self.cores = None    # pin(): the cores every process of the host gets

  def __repr__(self):
    return "Host({} {})".format(self.name, self.address)

  # -- running commands ---------------------------------------------------
  def command(self, argv, cwd=REPO):
    """argv run inside this host's network, UTS and mount namespaces (and
    on its cores, after pin())."""
    if self.cores is not None:
      argv = ["taskset", "-c", ",".join(map(str, self.cores)), *argv]
    return ["nsenter", "-t", str(self.anchor), "-n", "-u", "-m",
            "--wdns=" + cwd, *argv]

  def popen(self, argv, cwd=REPO, env=None, **kwargs):
    """subprocess.Popen of `argv` inside the host (PATH starts with the bin
    directory of this Python, so horovodrun and the venv come first)."""
    return subprocess.Popen(self.command(argv, cwd), env=_job_env(env),
                            **kwargs)

  def run(self, argv, cwd=REPO, env=None, timeout=120, check=False):
    """Runs `argv` inside the host; a CompletedProcess with text output."""
    return subprocess.run(self.command(argv, cwd), env=_job_env(env),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout,
                          check=check)

  def path(self, inside):
    """The root namespace's path of `inside`, a path under SCRATCH here."""
    relative = os.path.relpath(inside, self.cluster.scratch)
    if relative.startswith(".."):
      raise ValueError("{} is not under {}".format(inside,
                                                   self.cluster.scratch))
    return os.path.join(self.scratch, relative)

  def pids(self):
    """Processes in this host's network namespace."""
    out = _sh(["ip", "netns", "pids", self.netns], check=False).stdout
    return [int(p) for p in out.split()]

  def processes(self, pattern):
    """{pid: cmdline} of this host's processes whose command line holds
    `pattern` (shell wrappers excluded)."""
    found = {}
    for pid in self.pids():
      cmdline = _cmdline(pid)
      if pattern in cmdline and not cmdline.startswith(("/bin/sh", "sh ",
                                                        "bash ")):
        found[pid] = cmdline
    return found

  def kill(self, pattern, sig=signal.SIGKILL):
    """Sends `sig` to this host's processes matching `pattern`; their pids."""
    pids = list(self.processes(pattern))
    for pid in pids:
      with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
    return pids

  # -- changing the host --------------------------------------------------
  def link(self, up):
    """Plugs (True) or unplugs (False) the host's cable at the switch."""
    _sh(["ip", "link", "set", self.veth, "up" if up else "down"])

  def set_rate(self, rate):
    """Limits the host's link to `rate` both ways (tc's units: "100mbit",
    "1gbit"); None removes the limit. A token bucket (tbf) shapes what leaves
    an interface, so there are two: on the host's eth0 (what it sends) and
    on its switch port, the bridge's end of the pair (what it receives).
    This machine's kernel has tbf and htb but not netem (nor fq), so no
    delay is added: the link's latency is the veth's own
    (tools/linkcheck.py measures both)."""
    for tc in (["tc", "-n", self.netns, "qdisc"], ["tc", "qdisc"]):
      device = INTERFACE if "-n" in tc else self.veth
      if rate is None:
        _sh(tc + ["del", "dev", device, "root"], check=False)
      else:
        _sh(tc + ["replace", "dev", device, "root", "tbf", "rate", rate,
                  "burst", _burst(rate), "latency", LINK_QUEUE])

  def rate(self):
    """The rate set_rate gave this host's eth0 ("100Mbit"), or None."""
    out = _sh(["tc", "-n", self.netns, "qdisc", "show", "dev", INTERFACE],
              check=False).stdout.split()
    return out[out.index("rate") + 1] if "tbf" in out and "rate" in out \
        else None

  def pin(self, cores):
    """Gives the host CPU cores of its own (a list of core ids; None: all):
    commands run in it, and every ssh session through its sshd, which
    passes its CPU affinity on, run on those cores only. Hosts on one
    machine otherwise share all its cores, which no cluster does."""
    self.cores = None if cores is None else sorted(cores)
    pid = _read_pid(os.path.join(self.dir, "sshd.pid"))
    if pid:
      os.sched_setaffinity(pid, self.cores or range(os.cpu_count()))

  def bind(self, source, target):
    """Mounts `source` over `target` on this host only: a node whose disk
    differs from the others' at the same path (another install, say)."""
    _sh(self.command(["mount", "--bind", source, target], cwd="/"))

  def unbind(self, target):
    _sh(self.command(["umount", target], cwd="/"))

  def resolve_own_name_to(self, ip):
    """Rewrites this host's /etc/hosts so its name resolves to `ip` (e.g.
    Debian's 127.0.1.1 line, the classic multi-host pitfall)."""
    self.cluster._write_hosts_file(self, own_address=ip)

  def stop_sshd(self):
    pid = _read_pid(os.path.join(self.dir, "sshd.pid"))
    if pid:
      with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
      _wait_until(lambda: not _alive(pid), READY_SECONDS, "sshd to stop")

  def start_sshd(self):
    config = os.path.join(self.dir, "sshd_config")
    _sh(self.command([SSHD, "-f", config, "-E",
                      os.path.join(self.dir, "sshd.log")], cwd="/"))
    _wait_until(lambda: _alive(_read_pid(os.path.join(self.dir, "sshd.pid"))),
                READY_SECONDS, "sshd on " + self.name)


class UpDown:
  """`with X(...) as x:` brings x up and always down again (Cluster, and
  testslurm's Slurm on it)."""

  def __enter__(self):
    self.up()
    return self

  def __exit__(self, *exc):
    self.down()
    return False


class Cluster(UpDown):
  """`hosts` test hosts lh1..lhN on one bridge; a context manager.

  slot: which bridge, subnet (198.18.<slot>.0/24) and state directory;
  None takes the first free one from 1 on and holds it with a lock.
  link: each host's link rate, both ways, e.g. "100mbit" (Host.set_rate);
  None: no limit.
  detached: the hosts outlive this process (the command line's `up`): their
  anchors hold the slot's lock. Otherwise this process holds it, and the
  next user of the slot removes what a killed one left.
  """

  def __init__(self, hosts=2, slot=None, link=None, detached=False):
    if not 1 <= hosts <= 250:
      raise ValueError("hosts: expected 1..250, got {}".format(hosts))
    self._num_hosts = hosts
    self._lock = None
    if slot is None:
      slot, self._lock = _free_slot()
    self.slot = slot
    self.dir = state_dir(slot)
    self.scratch = scratch_path(slot)
    self.bridge = "{}{}-br".format(PREFIX, slot)
    self.ssh_dir = os.path.join(self.dir, "ssh")
    self.hosts = [Host(self, i) for i in range(1, hosts + 1)]
    self.link = link     # each host's link rate (Host.set_rate), or None
    self.detached = detached

  def host(self, name):
    return next(h for h in self.hosts if h.name == name)

  def hostfile(self, slots, hosts=None):
    """Writes a horovodrun/mpirun hostfile (`lh1 slots=2` lines); its path."""
    path = os.path.join(self.dir, "hostfile")
    with open(path, "w") as f:
      for host in hosts or self.hosts:
        f.write("{} slots={}\n".format(host.name, slots))
    return path

  # -- up and down ----------------------------------------------------------
  def up(self):
    """Brings every host up, after removing what a killed run left."""
    ensure_prerequisites()
    if self._lock is None:
      try:
        self._lock = _take_slot(self.slot)
      except SlotBusy:
        raise HarnessError(
            "slot {} is in use (its lock {} is held: another test session "
            "or `testhosts.py up`); take another --slot, or bring it down "
            "first".format(self.slot, _lock_path(self.slot)))
    teardown(self.slot)
    with contextlib.ExitStack() as undo:
      undo.callback(self.down)   # a failure half-way leaves nothing behind
      os.makedirs(self.scratch)
      self._make_keys()
      _sh(["ip", "link", "add", self.bridge, "type", "bridge"])
      _sh(["ip", "link", "set", self.bridge, "up"])
      for host in self.hosts:
        self._make_host(host)
      for host in self.hosts:
        host.start_sshd()
        if self.link:
          host.set_rate(self.link)
      undo.pop_all()
    return self

  def down(self):
    teardown(self.slot)
    if self._lock is not None:
      self._lock.close()
      self._lock = None

  def _make_keys(self):
    os.makedirs(self.ssh_dir, mode=0o700)
    key = os.path.join(self.ssh_dir, "id_ed25519")
    host_key = os.path.join(self.ssh_dir, "host_ed25519")
    for path, comment in ((key, "legacy-hvd-testhosts"),
                          (host_key, "legacy-hvd-testhost")):
      _sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment,
           "-f", path])
    shutil.copy(key + ".pub", os.path.join(self.ssh_dir, "authorized_keys"))
    with open(host_key + ".pub") as f:
      key_type, key_text = f.read().split()[:2]
    names = ",".join(n for h in self.hosts for n in (h.name, h.address))
    with open(os.path.join(self.ssh_dir, "known_hosts"), "w") as f:
      f.write("{} {} {}\n".format(names, key_type, key_text))
    with open(os.path.join(self.ssh_dir, "ssh_config"), "w") as f:
      f.write("# The test hosts' ssh client settings (tools/testhosts.py).\n"
              "Host *\n"
              "  IdentityFile {key}\n"
              "  UserKnownHostsFile {dir}/known_hosts\n"
              "  GlobalKnownHostsFile /dev/null\n"
              "  StrictHostKeyChecking yes\n"
              "  PasswordAuthentication no\n"
              "  ConnectTimeout 5\n"
              "  LogLevel ERROR\n".format(key=key, dir=self.ssh_dir))

  def _write_hosts_file(self, host, own_address=None):
    with open(host.hosts_file, "w") as f:
      f.write("127.0.0.1 localhost\n")
      for other in self.hosts:
        ip = own_address if (other is host and own_address) else other.address
        f.write("{} {}\n".format(ip, other.name))

  def _make_host(self, host):
    os.makedirs(host.scratch)
    self._write_hosts_file(host)
    _sh(["ip", "netns", "add", host.netns])
    _sh(["ip", "link", "add", host.veth, "type", "veth", "peer", "name",
         INTERFACE, "netns", host.netns])
    _sh(["ip", "link", "set", host.veth, "master", self.bridge, "up"])
    inside = ["ip", "-n", host.netns]
    _sh(inside + ["addr", "add", host.address + "/24", "dev", INTERFACE])
    _sh(inside + ["link", "set", INTERFACE, "up"])
    _sh(inside + ["link", "set", "lo", "up"])
    # The anchor: a process that holds the host's own UTS and mount
    # namespaces (its network one is the named netns) for as long as it lives.
    # Detached, it inherits the slot's lock and holds it while the host is up.
    anchor = subprocess.Popen(
        ["ip", "netns", "exec", host.netns, "unshare", "--uts", "--mount",
         "--propagation", "private", "sleep", "infinity"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
        pass_fds=(self._lock.fileno(),) if self.detached else ())
    host.anchor = anchor.pid
    with open(os.path.join(host.dir, "anchor.pid"), "w") as f:
      f.write("{}\n".format(anchor.pid))
    _wait_until(lambda: _in_own_namespaces(anchor.pid), READY_SECONDS,
                "the namespaces of " + host.name)
    _sh(host.command(["hostname", host.name], cwd="/"))
    # /run: a private tmpfs (sshd's privilege separation directory lives
    # there); the rest: the host's own files over the machine's.
    mounts = [["mount", "-t", "tmpfs", "tmpfs", "/run"],
              ["mkdir", "-p", "/run/sshd"],
              ["mount", "--bind", host.hosts_file, "/etc/hosts"],
              ["mount", "--bind", os.path.join(self.ssh_dir, "ssh_config"),
               "/etc/ssh/ssh_config"],
              ["mount", "--bind", host.scratch, self.scratch]]
    for mount in mounts:
      _sh(host.command(mount, cwd="/"))
    with open(os.path.join(host.dir, "sshd_config"), "w") as f:
      f.write("ListenAddress {address}\n"
              "HostKey {ssh}/host_ed25519\n"
              "AuthorizedKeysFile {ssh}/authorized_keys\n"
              "PermitRootLogin prohibit-password\n"
              "PasswordAuthentication no\n"
              "KbdInteractiveAuthentication no\n"
              "UsePAM no\n"
              "StrictModes no\n"
              "PidFile {dir}/sshd.pid\n"
              "AcceptEnv LANG LC_*\n".format(address=host.address,
                                              ssh=self.ssh_dir, dir=host.dir))


def teardown(slot):
  """Removes every host, the bridge and the state of `slot`; idempotent.

  Works from names alone, so it also cleans up after a killed run: every
  process in a host's network namespace (its sshd, the anchor, any rank
  started there) is killed, then the namespace and the bridge are deleted.
  """
  prefix = "{}{}-".format(PREFIX, slot)
  names = [line.split()[0] for line in
           _sh(["ip", "netns", "list"], check=False).stdout.splitlines()
           if line.startswith(prefix)]
  for name in names:
    pids = [int(p) for p in
            _sh(["ip", "netns", "pids", name], check=False).stdout.split()]
    for pid in pids:
      with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    for pid in pids:
      _reap(pid)
    _sh(["ip", "netns", "delete", name], check=False)
  # The switch ports and the bridge. A deleted namespace takes its end of a
  # veth pair with it only once the kernel has freed it, which may be later.
  for line in _sh(["ip", "-o", "link", "show"], check=False).stdout.splitlines():
    link = line.split(":")[1].strip().split("@")[0]
    if link.startswith(prefix):
      _sh(["ip", "link", "delete", link], check=False)
  shutil.rmtree(state_dir(slot), ignore_errors=True)


def slots_in_use():
  """Slots that have a namespace or a state directory on this machine."""
  found = set()
  for line in _sh(["ip", "netns", "list"], check=False).stdout.splitlines():
    name = line.split()[0]
    if name.startswith(PREFIX) and "-lh" in name:
      found.add(int(name[len(PREFIX):name.index("-")]))
  if os.path.isdir(STATE_ROOT):
    found.update(int(d) for d in os.listdir(STATE_ROOT) if d.isdigit())
  return sorted(found)


def _lock_path(slot):
  return os.path.join(STATE_ROOT, "slot-{}.lock".format(slot))


def _take_slot(slot):
  """The open lock file of `slot`, locked by us; SlotBusy if held."""
  os.makedirs(STATE_ROOT, exist_ok=True)
  lock = open(_lock_path(slot), "w")
  try:
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except OSError:
    lock.close()
    raise SlotBusy(slot)
  return lock


def _free_slot():
  """The first slot from 1 whose lock this process can take: (slot, lock)."""
  for slot in range(1, MAX_SLOT + 1):
    try:
      return slot, _take_slot(slot)
    except SlotBusy:
      continue
  raise HarnessError("all {} test-host slots are in use".format(MAX_SLOT))


def rate_mbit(rate):
  """tc's rate ("100mbit", "1gbit", "500kbit") in Mbit/s."""
  for unit, scale in (("kbit", 1e-3), ("mbit", 1.0), ("gbit", 1e3),
                      ("bit", 1e-6)):
    if rate.lower().endswith(unit):
      try:
        return float(rate[:-len(unit)]) * scale
      except ValueError:
        break
  raise ValueError("expected a rate like 100mbit or 1gbit, got " + rate)


def _burst(rate):
  """tbf's bucket for `rate` in bytes (LINK_BURST_*; tbf splits larger GSO
  segments itself)."""
  seconds_worth = rate_mbit(rate) * 1e6 / 8 * LINK_BURST_SECONDS
  return "{}b".format(int(max(LINK_BURST_BYTES, seconds_worth)))


def _job_env(env):
  """os.environ plus `env`, with this Python's bin directory first on PATH."""
  merged = dict(os.environ, **(env or {}))
  bin_dir = os.path.dirname(sys.executable)
  merged["PATH"] = bin_dir + os.pathsep + merged.get("PATH", "")
  return merged


def _cmdline(pid):
  try:
    with open("/proc/{}/cmdline".format(pid), "rb") as f:
      return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
  except OSError:
    return ""


def _in_own_namespaces(pid):
  try:
    return all(os.readlink("/proc/{}/ns/{}".format(pid, ns))
               != os.readlink("/proc/self/ns/{}".format(ns))
               for ns in ("net", "uts", "mnt")) and _cmdline(pid).startswith(
                   "sleep")
  except OSError:
    return False


def _read_pid(path):
  try:
    with open(path) as f:
      return int(f.read().split()[0])
  except (OSError, ValueError, IndexError):
    return None


def _alive(pid):
  if not pid:
    return False
  try:
    with open("/proc/{}/stat".format(pid)) as f:
      return f.read().split(")")[-1].split()[0] != "Z"
  except OSError:
    return False


def _reap(pid):
  """Waits for a killed child of ours; other processes just disappear."""
  with contextlib.suppress(ChildProcessError, OSError):
    os.waitpid(pid, 0)


def _wait_until(predicate, timeout, what):
  deadline = time.monotonic() + timeout
  while not predicate():
    if time.monotonic() > deadline:
      raise HarnessError("timed out after {} s waiting for {}".format(
          timeout, what))
    time.sleep(0.05)


def attach(slot=0):
  """A Cluster object for the hosts `up` made earlier in `slot` (to use them
  from another process, e.g. tools/linkcheck.py); None when none are up."""
  hosts = _count_hosts(slot)
  return _attach(slot, hosts) if hosts else None


def _attach(slot, hosts):
  """A Cluster object for hosts that `up` made earlier (for status/enter)."""
  cluster = Cluster(hosts=hosts, slot=slot)
  for host in cluster.hosts:
    host.anchor = _read_pid(os.path.join(host.dir, "anchor.pid"))
  return cluster


def _count_hosts(slot):
  prefix = "{}{}-lh".format(PREFIX, slot)
  return len([l for l in _sh(["ip", "netns", "list"],
                             check=False).stdout.splitlines()
              if l.startswith(prefix)])


def main(argv=None):
  parser = argparse.ArgumentParser(
      prog="testhosts", description=__doc__.splitlines()[0])
  parser.add_argument("command", choices=("up", "down", "status", "link"))
  parser.add_argument("--hosts", type=int, default=2, help="hosts for `up`")
  parser.add_argument("--slot", type=int, default=0,
                      help="which cluster (0: the one for people)")
  parser.add_argument("--link", default=None,
                      help="`up`, `link`: each host's link rate both ways, "
                      "e.g. 100mbit (`link` without it: no limit; check it "
                      "with tools/linkcheck.py)")
  parser.add_argument("--all", action="store_true",
                      help="`down`: every slot, the tests' ones included")
  args = parser.parse_args(argv)
  if args.link:
    try:
      rate_mbit(args.link)
    except ValueError as e:
      parser.error("--link: {}".format(e))
  try:
    if args.command == "up":
      cluster = Cluster(hosts=args.hosts, slot=args.slot, link=args.link,
                        detached=True).up()
      names = ",".join("{}:2".format(h.name) for h in cluster.hosts)
      print("testhosts: up: " + ", ".join(
          "{} {} (anchor pid {})".format(h.name, h.address, h.anchor)
          for h in cluster.hosts))
      print("  private scratch on every host: {}".format(cluster.scratch))
      print("  enter lh1:  nsenter -t {} -n -u -m --wdns={} bash".format(
          cluster.hosts[0].anchor, REPO))
      print("  then:       horovodrun -np {} -H {} --network-interface {} "
            "python -m legacy_hvd.train --batch_size=64".format(
                2 * len(cluster.hosts), names, INTERFACE))
      print("  down:       python tools/testhosts.py down")
    elif args.command == "link":
      cluster = attach(args.slot)
      if cluster is None:
        raise HarnessError("no test hosts in slot {}".format(args.slot))
      for host in cluster.hosts:
        host.set_rate(args.link)
      print("testhosts: slot {}: every link {}".format(
          args.slot, args.link or "unlimited"))
    elif args.command == "down":
      for slot in (slots_in_use() if args.all else [args.slot]):
        teardown(slot)
        print("testhosts: slot {} down".format(slot))
    else:
      slots = slots_in_use()
      if not slots:
        print("testhosts: no test hosts are up")
      for slot in slots:
        cluster = _attach(slot, _count_hosts(slot))
        for host in cluster.hosts:
          sshd = _read_pid(os.path.join(host.dir, "sshd.pid"))
          print("slot {} {} {} anchor {} sshd {} processes {} link {}".format(
              slot, host.name, host.address,
              "up" if _alive(host.anchor) else "down",
              "up" if _alive(sshd) else "down", len(host.pids()),
              host.rate() or "unlimited"))
  except HarnessError as e:
    print("testhosts: error: {}".format(e), file=sys.stderr)
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main())
