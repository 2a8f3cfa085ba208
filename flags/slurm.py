"""Flags of the Slurm launcher (python -m legacy_hvd.launch.slurm); every
other flag on its command line goes to the trainer.
"""
from absl import flags

from flags import hosts


def define_slurm(flag_values=flags.FLAGS):
  import flags as trainer_flags   # the package (absl's is `flags` here)
  trainers = tuple(trainer_flags.TRAINERS)   # --module's choices
  flags.DEFINE_enum("module", trainers[0], trainers, "The trainer to run.",
                    flag_values=flag_values)
  flags.DEFINE_bool(
      "preflight", False, "Run legacy_hvd.launch.preflight on the "
      "allocation's hosts first (it logs in with ssh).",
      flag_values=flag_values)
  flags.DEFINE_string(
      "image", None, "Run every task in this image (a Charliecloud directory "
      "of a `make image` image, ch-convert's, at this path on every node) "
      "with ch-run; the trainer's paths are the image's "
      "(docs/containers.md).", flag_values=flag_values)
  flags.DEFINE_multi_string(
      "bind", [], "With --image: mount this node's directory SRC at DST "
      "(SRC:DST), a directory the image has (/data, /runs); repeatable.",
      flag_values=flag_values)
  hosts.define_network_interface(flag_values)
  hosts.define_max_restarts(flag_values)
  flags.DEFINE_integer(
      "min_nodes", None, "The fewest nodes a job requeued after a lost node "
      "may run on: Slurm then places it on as many as are free, from this "
      "many to the job's own node count. Needs the job submitted with a total "
      "task count (sbatch -n), not --ntasks-per-node. Unset: the job's own "
      "count, on other nodes.", flag_values=flag_values)
  flags.register_validator("min_nodes", lambda v: v is None or v >= 1,
                           message="--min_nodes must be a positive integer",
                           flag_values=flag_values)
