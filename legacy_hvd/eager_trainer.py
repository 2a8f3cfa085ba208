"""What the two eager TF2 trainers share: start-up, restore, the last word.

    hvd.init(); ranks = world.Ranks.of(hvd)
    watch = start(config, data, ranks, own_threads, "TF2 loop (v1 optimizer)")
    manager, saved_step = restore(config.model_dir, ranks.rank, step,
                                  optimizer, params, rate_of)   # rank 0
    ... train ...
    test_set, held_out = held_out_evaluation(forward, data, ranks, plan,
                                             config, step_log)
    ... train; after each step, every rank alike:
    if held_out.due(step): held_out.record(step, test_set.run())
    summary = final_summary(test_set, held_out, params, ranks, progress,
                            plan, config)   # every rank: test set, digests

legacy_hvd.train_tf2 (the tf.function loop) and legacy_hvd.train_keras
(Keras fit) build their models and steps differently and meet here for the
rest, which legacy_hvd.train does in a graph: placement, rank 0's
model-directory check, the lost-host watch, the world line; TF2 object
checkpoints (the same keys for both, so each resumes the other's); the
test-set evaluation and the check that every rank ended with the same
weights.
"""
import horovod.tensorflow as hvd
import tensorflow.compat.v2 as tf

from legacy_hvd import checkpoints
from legacy_hvd import devices
from legacy_hvd import faults
from legacy_hvd import heldout
from legacy_hvd import migration
from legacy_hvd import model
from legacy_hvd import results
from legacy_hvd import scoring
from legacy_hvd import startup
from legacy_hvd import trainer

MAX_CHECKPOINTS = 5   # kept in the model directory, as TF1's Saver keeps


def start(config, data, ranks, own_threads, trainer_name):
  """Everything between hvd.init() and the model; returns the lost-host
  watch (peers.LossWatch) that train() consults when a step fails."""
  devices.place_eager_rank(config, ranks, own_threads)
  startup.check_on_rank0_eagerly(ranks.rank, faults.model_dir_checks(
      config.model_dir, faults.tf2_checkpoint_shapes(),
      lambda: migration.check(config.model_dir, config.optimizer,
                              migration.TF2)))
  # Horovod: every rank learns where every other rank runs (eagerly).
  return trainer.watch_hosts_and_log_start(
      config, data, ranks,
      lambda row: hvd.allgather(tf.constant(row[None])).numpy(), trainer_name)


def restore(model_dir, rank, step, optimizer, params, rate_of):
  """Rank 0's CheckpointManager, after restoring its newest checkpoint
  (startup checked it is intact; another trainer's is converted first,
  legacy_hvd/migration.py); (manager or None, the restored step or None).
  The other ranks get rank 0's values by broadcast. rate_of: step -> the
  learning rate (trainer.rate_of)."""
  checkpoint = tf.train.Checkpoint(
      step=step, optimizer=optimizer,
      **{checkpoints.tf2_attribute(name): variable
         for name, variable in params.items()})
  if rank != 0:
    return None, None
  migration.to_tf2(model_dir, checkpoint, step, optimizer, params, rate_of)
  manager = tf.train.CheckpointManager(checkpoint, model_dir,
                                       max_to_keep=MAX_CHECKPOINTS)
  if not manager.latest_checkpoint:
    return manager, None
  # Optimizer slots that do not exist yet are restored when first built.
  checkpoint.restore(manager.latest_checkpoint)
  return manager, int(step.numpy())


def held_out_evaluation(forward, data, ranks, plan, config, step_log):
  """(scoring.EagerEvaluation of this rank's test shard, its HeldOut):
  what scores the test set, and when and where the scores go.

  forward: float32 images [N, 32, 32, 3] -> logits [N, 10].
  """
  # Horovod: every rank scores its test shard; the counts are summed.
  test_set = scoring.EagerEvaluation(
      forward, data.test_images, data.test_labels, ranks.size, ranks.rank,
      lambda counts: hvd.allreduce(counts, op=hvd.Sum))
  return test_set, heldout.HeldOut(
      config.eval_every_n_steps, plan.max_steps, ranks.rank,
      config.model_dir, step_log)


def final_summary(test_set, held_out, params, ranks, progress, plan, config):
  """Every rank: scores its test shard, checks the weights are in sync;
  the results.json fields (results.run_summary, and the evaluations)."""
  metrics = test_set.run()
  held_out.record_final(progress.last_step, metrics)
  # Horovod: gather every rank's weight digest to check they stayed in sync.
  digests = hvd.allgather(model.weight_digest(params)[None]).numpy().tolist()
  return dict(results.run_summary(metrics, digests, progress, ranks.size,
                                  config.batch_size, plan.steps_per_epoch),
              **held_out.results())
