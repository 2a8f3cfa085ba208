"""Flags of the Slurm launcher (python -m legacy_hvd.slurm) that it reads
with absl; its --module and --preflight are argparse's (legacy_hvd/slurm.py).

    define_slurm()   # --network_interface and --max_restarts (flags/hosts.py),
                     # --min_nodes
"""
from absl import flags

from flags import hosts


def define_slurm(flag_values=flags.FLAGS):
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
