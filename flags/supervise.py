"""Flags of the supervisor (python -m legacy_hvd.supervise).

    define_supervise()   # -H/--hosts, --hostfile or --host_discovery_script,
                         # --min_np, --max_restarts, ...
"""
from absl import flags


def define_supervise(flag_values=flags.FLAGS):
  fv = {"flag_values": flag_values}
  flags.DEFINE_string(
      "hosts", None, "The hosts of the job as horovodrun takes them: "
      "host:slots,host:slots (e.g. lh1:1,lh2:1,lh3:1); the first runs rank 0 "
      "while it remains.", short_name="H", **fv)
  flags.DEFINE_string(
      "hostfile", None, "A horovodrun hostfile (lines 'host slots=N') "
      "instead of -H.", **fv)
  flags.DEFINE_string(
      "host_discovery_script", None, "An executable that prints the hosts "
      "available now, one 'host:slots' a line (Elastic Horovod's "
      "convention); run before every launch, instead of -H.", **fv)
  flags.DEFINE_integer(
      "min_np", 1, "The fewest ranks to relaunch with: with fewer slots left "
      "the supervisor stops (exit 75, requeue).", **fv)
  flags.DEFINE_integer(
      "max_restarts", 3, "Relaunches allowed after lost or stuck hosts; once "
      "used up the next loss stops the job (exit 75, requeue).", **fv)
  flags.DEFINE_string(
      "network_interface", None, "horovodrun --network-interface for every "
      "launch across hosts (a launch on this host alone gets none: "
      "horovodrun wants loopback there); unset: horovodrun picks.", **fv)
  flags.DEFINE_integer(
      "ssh_timeout", 5, "Seconds for each host's ssh connection when the "
      "supervisor checks which hosts are still reachable.", **fv)
  flags.DEFINE_integer(
      "ssh_port", None, "The hosts' ssh port (horovodrun -p); unset: ssh's "
      "default.", **fv)

  @flags.multi_flags_validator(
      ["hosts", "hostfile", "host_discovery_script"], message="give the "
      "hosts with exactly one of -H/--hosts, --hostfile and "
      "--host_discovery_script", **fv)
  def _one_host_source(values):
    return sum(values[name] is not None for name in values) == 1

  flags.register_validator("min_np", lambda v: v >= 1,
                           message="--min_np must be a positive integer",
                           **fv)
  flags.register_validator("max_restarts", lambda v: v >= 0,
                           message="--max_restarts must be zero or positive",
                           **fv)
  flags.register_validator("ssh_timeout", lambda v: v >= 1,
                           message="--ssh_timeout must be a positive integer",
                           **fv)
