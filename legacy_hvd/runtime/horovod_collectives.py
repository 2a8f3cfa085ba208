"""Horovod's collectives, as the eager runtime asks for them.

    collectives = horovod_collectives.Collectives()   # after hvd.init()
    collectives.broadcast_from_rank0(1)     # int -> rank 0's, on every rank
    collectives.allgather(rows)             # [n, ...] -> [size * n, ...]
    collectives.sum(counts)                 # summed over ranks
    collectives.average(flag)               # averaged over ranks

legacy_hvd/training/eager_job.py runs its start-up check, the lost-host
watch's roster, the stop agreement, the test-set sums, the weight digests
and the last meeting before exit through these four; the TF2 Horovod
trainers pass this class, legacy_hvd.train_mwms its tf.distribute twin
(strategy_collectives.py). Eagerly, and inside a tf.function (sum,
average).
"""
import horovod.tensorflow as hvd
import tensorflow.compat.v2 as tf


class Collectives:
  """Horovod's allreduce, allgather and broadcast (hvd.init() done)."""

  chief_exits_last = False   # Horovod ranks exit in any order

  def broadcast_from_rank0(self, value):
    # Horovod: rank 0's int (its check's verdict) reaches every rank.
    return int(hvd.broadcast(tf.constant(value), root_rank=0))

  def allgather(self, tensor):
    # Horovod: every rank's rows, in rank order.
    return hvd.allgather(tensor)

  def sum(self, tensor):
    # Horovod: the sum over all ranks (the test set's counts).
    return hvd.allreduce(tensor, op=hvd.Sum)

  def average(self, tensor, name=None):
    # Horovod: the average over all ranks (a one-float flag).
    return hvd.allreduce(tensor, op=hvd.Average, name=name)
