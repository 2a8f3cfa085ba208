"""Flags of the workers' launcher (python -m legacy_hvd.launch.workers)."""
from absl import flags

from flags import hosts


def define_workers(flag_values=flags.FLAGS):
  fv = {"flag_values": flag_values}
  hosts.define_hosts(flag_values)
  hosts.define_ssh(flag_values)
  flags.DEFINE_integer(
      "port", None, "The first worker port on each host (its workers take "
      "PORT, PORT+1, ...). Unset: a port free on this host now, the same "
      "on every host.", **fv)
  flags.register_validator(
      "port", lambda v: v is None or 1024 <= v <= 65000,
      message="--port must be between 1024 and 65000", **fv)
