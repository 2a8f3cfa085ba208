"""Each srun task of the Slurm launcher becomes rank SLURM_PROCID of its plan,
with the HOROVOD_* variables horovodrun gives that slot, and execs the
trainer. Python 3.7-compatible; no TensorFlow, no Horovod."""
import collections
import os
import socket
import sys

from legacy_hvd.common import cli
from legacy_hvd.common import signals
from legacy_hvd.launch import hostlists

# A rank's place in the plan: what horovodrun tells each rank.
Slot = collections.namedtuple(
    "Slot", "hostname rank size local_rank local_size cross_rank cross_size")


def slots(hosts):
  """Every rank's Slot for "lh1:2,lh2:2": ranks fill one host after the
  other, as srun's default (block) distribution does, and horovodrun."""
  names = [host for host, count in hostlists.parse_hosts(hosts)
           for _ in range(count)]
  return [Slot(names[rank], *cli.workers_place(names, rank))
          for rank in range(len(names))]


def exec_task(module, trainer_args, env):
  """In an srun task: become rank SLURM_PROCID of the plan, running
  `python -m module trainer_args`."""
  rank = int(env["SLURM_PROCID"])
  slot = slots(env[cli.SLURM_PLAN])[rank]
  node = env.get("SLURMD_NODENAME", socket.gethostname())
  if slot.hostname != node:
    raise cli.UserError(
        "rank {} runs on {}, but the plan puts it on {}: run the ranks with "
        "srun's block distribution (the default)".format(rank, node,
                                                         slot.hostname))
  # Horovod: the variables horovodrun gives each rank of its slot.
  env = dict(env, HOROVOD_HOSTNAME=slot.hostname,
             HOROVOD_RANK=str(slot.rank), HOROVOD_SIZE=str(slot.size),
             HOROVOD_LOCAL_RANK=str(slot.local_rank),
             HOROVOD_LOCAL_SIZE=str(slot.local_size),
             HOROVOD_CROSS_RANK=str(slot.cross_rank),
             HOROVOD_CROSS_SIZE=str(slot.cross_size))
  if "HOROVOD_GLOO_IFACE" not in env:
    env["HOROVOD_GLOO_IFACE"] = interface_of(socket.gethostbyname(node))
  os.execve(sys.executable, [sys.executable, "-m", module, *trainer_args],
            env)


def interface_of(address):
  """The name of this node's interface holding `address`."""
  import psutil   # Horovod's launcher needs it too
  for name, addresses in psutil.net_if_addrs().items():
    if any(a.family == socket.AF_INET and a.address == address
           for a in addresses):
      return name
  raise cli.UserError(
      "{} resolves to {}, which no interface of this node holds: its name "
      "must resolve to its address on the job's network (or pass "
      "--network_interface)".format(socket.gethostname(), address))


def main(argv=None):
  """Execs the trainer `argv[0]` with the rest as its flags."""
  argv = sys.argv[1:] if argv is None else argv
  # A stop signal while the rank starts waits for the trainer's handlers.
  signals.hold()
  try:
    exec_task(argv[0], argv[1:], os.environ)
  except cli.UserError as e:
    cli.fail(str(e))


if __name__ == "__main__":
  main()
