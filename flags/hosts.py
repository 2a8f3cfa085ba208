"""Flags of the launchers that name a job's hosts, defined once for all of
them; each define_* takes the FlagValues to define them on (absl's global
FLAGS by default).
"""
from absl import flags

# Seconds for an ssh connection to a host (ssh -o ConnectTimeout): a host
# that is up but slow to take a login must not be left out (that shrinks the
# world for the rest of the run); the wait is paid only for a host really
# gone, once per launch, short beside Gloo's time-out.
SSH_TIMEOUT = 10


def define_hosts(flag_values=flags.FLAGS, discovery_script=False):
  """-H/--hosts and --hostfile, exactly one of them given; with
  `discovery_script`, --host_discovery_script as a third choice."""
  fv = {"flag_values": flag_values}
  flags.DEFINE_string(
      "hosts", None, "The hosts of the job as horovodrun takes them: "
      "host:slots,host:slots (e.g. lh1:2,lh2:2); the first runs rank 0.",
      short_name="H", **fv)
  flags.DEFINE_string(
      "hostfile", None, "A horovodrun/mpirun hostfile (lines 'host "
      "slots=N') instead of -H.", **fv)
  sources = ["hosts", "hostfile"]
  if discovery_script:
    flags.DEFINE_string(
        "host_discovery_script", None, "An executable that prints the hosts "
        "available now, one 'host:slots' a line (Elastic Horovod's "
        "convention); run before every launch, instead of -H.", **fv)
    sources.append("host_discovery_script")
  names = ["-H/--hosts"] + ["--" + name for name in sources[1:]]

  @flags.multi_flags_validator(
      sources, message="give the hosts with exactly one of {} and {}".format(
          ", ".join(names[:-1]), names[-1]), **fv)
  def _one_host_source(values):
    return sum(values[name] is not None for name in values) == 1


def define_ssh(flag_values=flags.FLAGS):
  """--ssh_timeout and --ssh_port: how a launcher logs in to the hosts."""
  fv = {"flag_values": flag_values}
  flags.DEFINE_integer(
      "ssh_timeout", SSH_TIMEOUT, "Seconds to wait for each host's ssh "
      "connection (the pre-flight check's probe; the supervisor's check of "
      "which hosts are still reachable).", **fv)
  flags.DEFINE_integer(
      "ssh_port", None, "The hosts' ssh port (horovodrun -p); unset: ssh's "
      "default.", **fv)
  flags.register_validator("ssh_timeout", lambda v: v >= 1,
                           message="--ssh_timeout must be a positive integer",
                           **fv)


def define_network_interface(flag_values=flags.FLAGS):
  """--network_interface: the interface the ranks use across hosts."""
  flags.DEFINE_string(
      "network_interface", None, "The interface the ranks use across hosts "
      "(horovodrun --network-interface; Gloo's HOROVOD_GLOO_IFACE under "
      "Slurm). Unset: horovodrun picks, and the pre-flight check accepts any "
      "that is not loopback; under Slurm, the one holding the address each "
      "node's name resolves to. A launch on this host alone gets none: "
      "horovodrun wants loopback there.", flag_values=flag_values)


def define_max_restarts(flag_values=flags.FLAGS):
  """--max_restarts: how often a launcher starts the job again after a lost
  host or rank."""
  flags.DEFINE_integer(
      "max_restarts", 3, "Relaunches allowed after lost or stuck hosts or "
      "ranks (the supervisor's relaunches; under Slurm, requeues without "
      "the lost node, counted across requeues); once used up the next loss "
      "stops the job (exit 75; under Slurm, FAILED).",
      flag_values=flag_values)
  flags.register_validator("max_restarts", lambda v: v >= 0,
                           message="--max_restarts must be zero or positive",
                           flag_values=flag_values)
