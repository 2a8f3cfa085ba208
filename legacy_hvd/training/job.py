"""What every trainer shares, each piece once (Plan, input, world line, result
files), so the paths differ only where their APIs do."""
import dataclasses

from absl import logging

from legacy_hvd.common import checkpoint_state
from legacy_hvd.common import results
from legacy_hvd.common.progress import Progress
from legacy_hvd.common.progress import StepLog
from legacy_hvd.data import pipeline
from legacy_hvd.faults.roster import Roster
from legacy_hvd.model import schedule
from legacy_hvd.rank import world
from legacy_hvd.training import job_faults


@dataclasses.dataclass(frozen=True)
class Plan:
  """The run's length and learning rate in global steps, for this world."""
  steps_per_epoch: int
  max_steps: int       # training ends at this global step
  warmup_steps: int
  lr_schedule: schedule.Schedule   # config.lr, scaled for `size`, warming up

  @classmethod
  def of(cls, config, num_train, size):
    steps_per_epoch = schedule.steps_per_epoch(num_train, config.batch_size,
                                               size)
    warmup_steps = round(config.warmup_epochs * steps_per_epoch)
    return cls(
        steps_per_epoch=steps_per_epoch,
        max_steps=config.max_steps or config.epochs * steps_per_epoch,
        warmup_steps=warmup_steps,
        # Horovod: scale the learning rate with the number of workers.
        lr_schedule=schedule.Schedule(
            config.lr, schedule.lr_scale(config.lr_scaling, size),
            warmup_steps))


def batches(config, images, labels, num_shards, shard_index, skip_examples):
  """This rank's endless (images, labels) batches; skip_examples (an int or
  int64 scalar tensor): where a resumed run's input continues."""
  if config.synthetic:
    return pipeline.synthetic_batches(config.batch_size, config.seed)
  return pipeline.train_batches(
      images, labels, config.batch_size, num_shards=num_shards,
      shard_index=shard_index, seed=config.seed, augment=config.augment,
      skip_examples=skip_examples)


def compression(config, hvd):
  """What hvd.DistributedOptimizer / DistributedGradientTape send."""
  # Horovod: --fp16_allreduce halves the bytes on the wire.
  return hvd.Compression.fp16 if config.fp16_allreduce else hvd.Compression.none


def progress_and_step_log(config, plan, ranks):
  """The run's Progress (rank 0 logs) and StepLog (rank 0 writes)."""
  progress = Progress(config.log_every_n_steps,
                      config.batch_size * ranks.size, log=ranks.rank == 0,
                      steps_per_epoch=plan.steps_per_epoch,
                      last_step=plan.max_steps)
  return progress, StepLog(config.step_log if ranks.rank == 0 else None)


def gather_roster(rank, collectives):
  """Every rank's host and probe port (a roster.Roster), by one allgather."""
  roster = Roster.listen(rank)
  # Horovod: every rank learns where every other rank runs.
  return roster.gather(collectives.allgather_rows)


def watch_hosts_and_log_start(config, data, ranks, collectives,
                              trainer_name):
  """After rank 0's checks: gathers where every rank runs, starts the
  lost-host watch over it and (rank 0) logs the start; returns the watch."""
  roster = gather_roster(ranks.rank, collectives)
  watch = job_faults.watch_lost_hosts(roster, ranks.rank, ranks.size,
                                      config.model_dir)
  if ranks.rank == 0:
    with job_faults.end_on_write_failure(config.model_dir, watch):  # world.json
      log_start(config, data, ranks.size, roster, trainer_name)
  return watch


def log_start(config, data, size, roster, trainer_name):
  """Rank 0: what trains on what, the world line (and what changed since the
  checkpoint's run: a relaunch on fewer hosts), and world.json."""
  logging.info("%s on %s: %d train, %d test images; %d workers",
               trainer_name, data.source, len(data.train_labels),
               len(data.test_labels), size)
  now = world.World(size, roster.hosts(), config.batch_size, config.lr,
                    config.lr_scaling, len(data.train_labels), config.epochs,
                    config.max_steps)
  logging.info("%s", world.describe(now))
  change = world.changes_since(now, world.read_previous(config.model_dir),
                               checkpoint_state.latest_step(config.model_dir))
  if change:
    logging.warning("%s", change)
  world.write(config.model_dir, now, results.write_json)


def finish(summary, stop_signals, config, data, rank, path_name,
           wait_for_all=None):
  """After training: exits as a stop signal asks (summary None), else rank
  0 writes results.json. wait_for_all: job_faults.exit_if_stopped's."""
  job_faults.exit_if_stopped(summary, stop_signals, rank, config.model_dir,
                             wait_for_all)
  if rank == 0:
    results.write_run_results(summary, config, data.source, path_name)
