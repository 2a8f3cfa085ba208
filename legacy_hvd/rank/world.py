"""What depends on the number of ranks, said once at start-up. A run resumed
in another world follows its batch, learning rate and shards, and carries the
global step on; world.json keeps the last start's world, to say what changed."""
import collections
import json
import os

from legacy_hvd.common import cli
from legacy_hvd.model import schedule

WORLD_FILE = "world.json"

World = collections.namedtuple(
    "World", "size hosts batch_size lr lr_scaling num_train epochs max_steps")


class Ranks(collections.namedtuple(
    "Ranks", "rank size local_rank local_size cross_rank cross_size")):
  """This process's place in the job, as plain ints passed down."""

  @classmethod
  def of(cls, hvd):
    """Read once, after hvd.init(), from horovod.tensorflow or a twin."""
    return cls(hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size(),
               hvd.cross_rank(), hvd.cross_size())

  @classmethod
  def of_workers(cls, workers, index):
    """tf.distribute's: worker `index` of `workers` (the cluster's
    "host:port" list, a cluster resolver's) is rank `index`."""
    return cls(*cli.workers_place(workers, index))


def _facts(world):
  steps_per_epoch = schedule.steps_per_epoch(world.num_train,
                                             world.batch_size, world.size)
  return dict(
      size=world.size,
      hosts=world.hosts,
      global_batch=world.batch_size * world.size,
      learning_rate=world.lr * schedule.lr_scale(world.lr_scaling, world.size),
      shard=world.num_train // world.size,
      steps_per_epoch=steps_per_epoch,
      last_step=world.max_steps or world.epochs * steps_per_epoch)


def describe(world):
  """One line: the world and everything that follows from its size."""
  f = _facts(world)
  del f["hosts"]
  hosts = ", ".join("{}: {}".format(h, _ranks(r))
                    for h, r in sorted(world.hosts.items(),
                                       key=lambda item: item[1][0]))
  return ("World: {size} ranks on {n} host{s} ({hosts}); global batch "
          "{global_batch}; learning rate {learning_rate:g} ({lr:g} x "
          "{scale:g}, --lr_scaling={scaling}); each rank reads {shard} of "
          "the {num_train} training images; {steps_per_epoch} steps per "
          "epoch; training ends at global step {last_step}").format(
              n=len(world.hosts), s="s" if len(world.hosts) > 1 else "",
              hosts=hosts, lr=world.lr,
              scale=schedule.lr_scale(world.lr_scaling, world.size),
              scaling=world.lr_scaling, num_train=world.num_train, **f)


def changes_since(world, previous, resume_step):
  """One line if the checkpoint was written by a world of another size."""
  if not previous or previous.get("size") == world.size:
    return None
  now = _facts(world)
  del now["hosts"]
  return ("Resuming at global step {step} with {size} ranks; the checkpoint "
          "was written by {old} ranks. What the job changes: the learning "
          "rate {old_lr:g} -> {learning_rate:g}, each rank's shard {old_shard}"
          " -> {shard} images, steps per epoch {old_spe} -> {steps_per_epoch} "
          "(global batch {old_batch} -> {global_batch}); the global step "
          "carries on, so steps before {step} were {old_batch} images each, "
          "and the run ends at step {last_step} ({end})").format(
              end=("--max_steps" if world.max_steps else
                   "--epochs x the new steps per epoch: pass --max_steps to "
                   "end elsewhere"),
              step=resume_step, old=previous["size"],
              old_lr=previous["learning_rate"], old_shard=previous["shard"],
              old_spe=previous["steps_per_epoch"],
              old_batch=previous["global_batch"], **now)


def read_previous(model_dir):
  """The facts of the last start in `model_dir`, or None."""
  try:
    with open(os.path.join(model_dir, WORLD_FILE)) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def write(model_dir, world, write_json):
  """Records this start's world (write_json: results.write_json, atomic)."""
  write_json(os.path.join(model_dir, WORLD_FILE), _facts(world))


def _ranks(ranks):
  if len(ranks) > 1 and ranks == list(range(ranks[0], ranks[-1] + 1)):
    return "ranks {}-{}".format(ranks[0], ranks[-1])
  return "rank{} {}".format("s" if len(ranks) > 1 else "",
                            ", ".join(map(str, ranks)))
