"""Flags of the pre-flight check (python -m legacy_hvd.preflight).

    define_preflight()   # -H/--hosts or --hostfile, --data_dir, --model_dir, ...
"""
from absl import flags


def define_preflight(flag_values=flags.FLAGS):
  fv = {"flag_values": flag_values}
  flags.DEFINE_string(
      "hosts", None, "The hosts of the job as horovodrun takes them: "
      "host:slots,host:slots (e.g. lh1:2,lh2:2).", short_name="H", **fv)
  flags.DEFINE_string(
      "hostfile", None, "A horovodrun/mpirun hostfile (lines 'host "
      "slots=N') instead of -H.", **fv)
  flags.DEFINE_string(
      "data_dir", None, "The --data_dir the job will get: it must exist and "
      "validate on every host. Unset: every host uses its Keras cache or the "
      "generated dataset.", **fv)
  flags.DEFINE_string(
      "model_dir", None, "The --model_dir the job will get: it must be "
      "writable on the first host (where rank 0 runs).", **fv)
  flags.DEFINE_string(
      "network_interface", None, "The interface the job will use "
      "(horovodrun --network-interface); unset: any that is not loopback.",
      **fv)
  flags.DEFINE_integer(
      "ssh_timeout", 10, "Seconds to wait for each host's ssh connection.",
      **fv)
  flags.DEFINE_integer(
      "ssh_port", None, "The hosts' ssh port (horovodrun -p); unset: ssh's "
      "default.", **fv)

  @flags.multi_flags_validator(
      ["hosts", "hostfile"], message="give the hosts with exactly one of "
      "-H/--hosts and --hostfile", **fv)
  def _one_host_list(values):
    return (values["hosts"] is None) != (values["hostfile"] is None)

  flags.register_validator("ssh_timeout", lambda v: v >= 1,
                           message="--ssh_timeout must be a positive integer",
                           **fv)
