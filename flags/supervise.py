"""Flags of the supervisor (python -m legacy_hvd.launch.supervise)."""
from absl import flags

from flags import hosts


def define_supervise(flag_values=flags.FLAGS):
  fv = {"flag_values": flag_values}
  hosts.define_hosts(flag_values, discovery_script=True)
  flags.DEFINE_integer(
      "min_np", 1, "The fewest ranks to relaunch with: with fewer slots left "
      "the supervisor stops (exit 75, requeue).", **fv)
  hosts.define_max_restarts(flag_values)
  hosts.define_network_interface(flag_values)
  hosts.define_ssh(flag_values)
  flags.register_validator("min_np", lambda v: v >= 1,
                           message="--min_np must be a positive integer",
                           **fv)
