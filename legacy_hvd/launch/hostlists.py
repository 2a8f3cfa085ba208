"""Host lists as horovodrun reads them, and which of them is this machine.
What horovodrun cannot use, or would use otherwise than meant, is refused
before any host is contacted: one line per bad item, then exit. No Horovod,
no TensorFlow; Python 3.7-compatible."""
import fcntl
import re
import socket
import struct
import sys

from legacy_hvd.common import cli

SIOCGIFADDR = 0x8915     # Linux ioctl: an interface's IPv4 address


def interfaces():
  """{interface: IPv4 address} of this host's interfaces that have one."""
  found = {}
  with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    for _, name in socket.if_nameindex():
      try:
        packed = fcntl.ioctl(s.fileno(), SIOCGIFADDR,
                             struct.pack("256s", name.encode()[:15]))
      except OSError:   # no IPv4 address
        continue
      found[name] = socket.inet_ntoa(packed[20:24])
  return found


# horovodrun 0.28.1 reads a hostfile line by line, every line (blank and
# '#' lines too) as "host slots=N", turns it into -H's "host:N" and checks
# that against this pattern (horovod.runner.common.util.hosts).
HOSTFILE_LINE = re.compile(r"^\s*(\S+)\s+slots=(\S*)\s*$")
HOST_NAME = re.compile(r"^[\w.-]+$")
HOSTFILE_FORM = "expected 'host slots=N' with N >= 1, as horovodrun reads it"


def parse_hosts(spec):
  """'lh1:2,lh2:2' -> [('lh1', 2), ('lh2', 2)] (horovodrun's -H); a usage
  error, one line per bad item, for what horovodrun cannot use."""
  entries = []
  for item in spec.split(","):
    name, colon, slots = item.strip().partition(":")
    entries.append(("-H {}".format(spec), "item {!r}".format(item),
                    name if colon else None, slots))
  return _checked_hosts(entries, "expected host:slots with slots >= 1, as "
                        "horovodrun reads it", cli.USAGE_ERROR)


def parse_hostfile(path):
  """A horovodrun hostfile -> [(host, slots)], read as strictly as
  horovodrun 0.28.1 reads it; one line per bad line of it, then exit 1."""
  try:
    with open(path) as f:
      lines = f.read().splitlines()
  except OSError as e:
    cli.fail("--hostfile={}: {}".format(path, e.strerror), cli.INPUT_ERROR)
  if not lines:
    cli.fail("--hostfile={}: names no host; {}".format(path, HOSTFILE_FORM),
             cli.INPUT_ERROR)
  entries = []
  for number, line in enumerate(lines, 1):
    match = HOSTFILE_LINE.match(line)
    name, slots = match.groups() if match else (None, None)
    if not line.strip() or line.lstrip().startswith("#"):
      name, slots = None, ("a {} line: horovodrun reads every line as a "
                           "host".format("blank" if not line.strip()
                                         else "comment"))
    entries.append(("--hostfile={}".format(path),
                    "line {} {!r}".format(number, line), name, slots))
  return _checked_hosts(entries, HOSTFILE_FORM, cli.INPUT_ERROR)


def parse_discovered(script, output, exit_code=cli.INPUT_ERROR):
  """A host-discovery script's output -> [(host, slots)]: `host:slots` or
  `host` (one slot) a line, as Elastic Horovod reads it; a line per bad line."""
  entries = []
  for number, line in enumerate(output.splitlines(), 1):
    if not line.strip():
      continue
    name, colon, slots = line.strip().partition(":")
    entries.append(("--host_discovery_script={}".format(script),
                    "line {} {!r}".format(number, line), name,
                    slots if colon else "1"))
  if not entries:
    cli.fail("--host_discovery_script={}: printed no host; expected one "
             "host:slots a line".format(script), exit_code)
  return _checked_hosts(entries, "expected host:slots (or host: one slot) "
                        "a line, as Elastic Horovod reads it", exit_code)


def _checked_hosts(entries, form, exit_code):
  """[(source, where, host, slots text)] -> [(host, slots)], or one error line
  per entry horovodrun cannot use, then exit. A None host may say why in its
  slots text."""
  found, hosts, first_seen = [], [], {}
  for source, where, name, slots in entries:
    at = "{}: {}".format(source, where)
    if name is None or not HOST_NAME.match(name):
      found.append("{}: {}{}".format(at, slots + "; " if name is None and
                                     slots else "", form))
    elif not slots.isdigit():
      found.append("{}: the slot count {!r} is not a number; {}".format(
          at, slots, form))
    elif int(slots) == 0:
      found.append("{}: zero slots: horovodrun starts no rank on {} (and "
                   "rank 0 would run on another host); {}".format(
                       at, name, form))
    elif name in first_seen:
      found.append("{}: {} is listed twice (also {}): its ranks would "
                   "collide in hvd.init(); give each host one entry with "
                   "all its slots".format(at, name, first_seen[name]))
    else:
      first_seen[name] = where
      hosts.append((name, int(slots)))
  for problem in found:
    print(cli.error_line(problem), file=sys.stderr, flush=True)
  if found:
    sys.exit(exit_code)
  return hosts


def hosts_arg(hosts):
  """[(host, slots)] -> horovodrun's -H form, "lh1:2,lh2:2"."""
  return ",".join("{}:{}".format(host, slots) for host, slots in hosts)


def slot_count(hosts):
  """[(host, slots)] -> the ranks they hold (horovodrun's -np)."""
  return sum(slots for _, slots in hosts)


def is_local(host):
  """Whether `host` names this machine (as horovodrun decides it)."""
  try:
    return socket.gethostbyname(host) in interfaces().values()
  except OSError:
    return False


def ssh_command(host, timeout, port=None):
  """The ssh argv (the remote command to be added) that logs in to `host` as
  horovodrun does: batch mode, no host-key question, `timeout` seconds."""
  argv = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
          "-o", "ConnectTimeout={}".format(timeout)]
  if port:
    argv += ["-p", str(port)]
  return argv + [host]
