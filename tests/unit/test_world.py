"""legacy_hvd.rank.world: what follows from the number of ranks, said once, and
what changed when a run resumes in another world."""
import json
import types

from legacy_hvd.rank import world

# 4 ranks on two hosts, the default flags: the worked example of the docs.
FOUR = world.World(size=4, hosts={"lh1": [0, 1], "lh2": [2, 3]},
                   batch_size=64, lr=0.001, lr_scaling="linear",
                   num_train=50000, epochs=10, max_steps=None)
# The same job relaunched on lh1 alone, after lh2 was lost.
TWO = FOUR._replace(size=2, hosts={"lh1": [0, 1]})


def write_plain_json(path, facts):
  with open(path, "w") as f:
    json.dump(facts, f)


def test_ranks_are_read_once_from_horovod():
  hvd = types.SimpleNamespace(rank=lambda: 3, size=lambda: 4,
                              local_rank=lambda: 1, local_size=lambda: 2,
                              cross_rank=lambda: 1, cross_size=lambda: 2)
  assert world.Ranks.of(hvd) == world.Ranks(rank=3, size=4, local_rank=1,
                                            local_size=2, cross_rank=1,
                                            cross_size=2)


def test_describe_says_everything_that_follows_from_the_size():
  # 64 x 4 = 256 images a step; 50000 / 4 = 12500 a shard; 12500 // 64 = 195
  # steps an epoch, 1950 in 10 epochs.
  assert world.describe(FOUR) == (
      "World: 4 ranks on 2 hosts (lh1: ranks 0-1, lh2: ranks 2-3); global "
      "batch 256; learning rate 0.004 (0.001 x 4, --lr_scaling=linear); "
      "each rank reads 12500 of the 50000 training images; 195 steps per "
      "epoch; training ends at global step 1950")


def test_describe_one_host_sqrt_scaling_and_max_steps():
  one_host = world.World(size=4, hosts={"node7": [0, 1, 2, 3]},
                         batch_size=32, lr=0.01, lr_scaling="sqrt",
                         num_train=1000, epochs=10, max_steps=500)
  assert world.describe(one_host) == (
      "World: 4 ranks on 1 host (node7: ranks 0-3); global batch 128; "
      "learning rate 0.02 (0.01 x 2, --lr_scaling=sqrt); each rank reads 250 "
      "of the 1000 training images; 7 steps per epoch; training ends at "
      "global step 500")


def test_describe_lists_hosts_by_their_first_rank():
  # Ranks not contiguous on a host (a launcher's round robin) are listed one
  # by one; the host of rank 0 comes first whatever its name.
  spread = FOUR._replace(hosts={"b": [0, 2], "a": [1, 3]}, lr_scaling="none")
  line = world.describe(spread)
  assert "(b: ranks 0, 2, a: ranks 1, 3)" in line
  assert "learning rate 0.001 (0.001 x 1, --lr_scaling=none)" in line


def test_the_world_is_written_and_read_back(tmp_path):
  world.write(str(tmp_path), FOUR, write_plain_json)
  assert world.read_previous(str(tmp_path)) == {
      "size": 4, "hosts": {"lh1": [0, 1], "lh2": [2, 3]},
      "global_batch": 256, "learning_rate": 0.001 * 4.0, "shard": 12500,
      "steps_per_epoch": 195, "last_step": 1950}
  assert sorted(p.name for p in tmp_path.iterdir()) == [world.WORLD_FILE]


def test_no_previous_world_when_missing_or_unreadable(tmp_path):
  assert world.read_previous(str(tmp_path)) is None
  (tmp_path / world.WORLD_FILE).write_text("{not json")
  assert world.read_previous(str(tmp_path)) is None


def test_a_resume_in_another_world_says_what_changes(tmp_path):
  world.write(str(tmp_path), FOUR, write_plain_json)
  previous = world.read_previous(str(tmp_path))
  assert world.changes_since(TWO, previous, 100) == (
      "Resuming at global step 100 with 2 ranks; the checkpoint was written "
      "by 4 ranks. What the job changes: the learning rate 0.004 -> 0.002, "
      "each rank's shard 12500 -> 25000 images, steps per epoch 195 -> 390 "
      "(global batch 256 -> 128); the global step carries on, so steps "
      "before 100 were 256 images each, and the run ends at step 3900 "
      "(--epochs x the new steps per epoch: pass --max_steps to end "
      "elsewhere)")
  fixed_end = TWO._replace(max_steps=2000)
  assert world.changes_since(fixed_end, previous, 100).endswith(
      "and the run ends at step 2000 (--max_steps)")


def test_nothing_to_say_in_the_same_world_or_on_a_first_start(tmp_path):
  world.write(str(tmp_path), FOUR, write_plain_json)
  previous = world.read_previous(str(tmp_path))
  # The same size on other hosts: the same rate, shards and steps.
  moved = FOUR._replace(hosts={"lh3": [0, 1], "lh4": [2, 3]})
  assert world.changes_since(moved, previous, 100) is None
  assert world.changes_since(TWO, None, 0) is None
