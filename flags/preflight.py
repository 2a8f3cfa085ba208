"""Flags of the pre-flight check (python -m legacy_hvd.launch.preflight)."""
from absl import flags

from flags import hosts


def define_preflight(flag_values=flags.FLAGS):
  fv = {"flag_values": flag_values}
  hosts.define_hosts(flag_values)
  flags.DEFINE_string(
      "data_dir", None, "The --data_dir the job will get: it must exist and "
      "validate on every host. Unset: every host uses its Keras cache or the "
      "generated dataset.", **fv)
  flags.DEFINE_string(
      "model_dir", None, "The --model_dir the job will get: it must be "
      "writable on the first host (where rank 0 runs).", **fv)
  flags.DEFINE_boolean(
      "horovodrun", True, "The job is started by horovodrun from this host: "
      "its HOME must be writable (horovodrun's cache). --nohorovodrun for "
      "srun (the Slurm launcher) or launch.workers.", **fv)
  hosts.define_network_interface(flag_values)
  hosts.define_ssh(flag_values)
