"""Horovod's collectives, as the runtime asks for them (it never sees hvd)."""
import horovod.tensorflow as hvd
import numpy as np
import tensorflow.compat.v1 as tf1
import tensorflow.compat.v2 as tf

from legacy_hvd.rank import devices


class Collectives:
  """Horovod's allreduce, allgather and broadcast (hvd.init() done)."""

  chief_exits_last = False   # Horovod ranks exit in any order

  def broadcast_from_rank0(self, value):
    # Horovod: rank 0's int (its check's verdict) reaches every rank.
    return int(hvd.broadcast(tf.constant(value), root_rank=0))

  def allgather(self, tensor):
    # Horovod: every rank's rows, in rank order.
    return hvd.allgather(tensor)

  def allgather_rows(self, row):
    """uint8 row [n] (numpy) -> every rank's rows [size, n] (the roster's)."""
    return self.allgather(tf.constant(row[None])).numpy()

  def sum(self, tensor):
    # Horovod: the sum over all ranks (the test set's counts).
    return hvd.allreduce(tensor, op=hvd.Sum)

  def average(self, tensor, name=None):
    # Horovod: the average over all ranks (the stop requests).
    return hvd.allreduce(tensor, op=hvd.Average, name=name)


class GraphCollectives(Collectives):
  """For a TF1 graph job: sum, average and allgather build ops of its graph."""

  def broadcast_from_rank0(self, value):
    # Horovod: rank 0's int (its check's verdict) reaches every rank.
    return int(in_own_session(lambda mine: hvd.broadcast(mine, root_rank=0),
                              np.int64(value)))

  def allgather_rows(self, row):
    # Horovod: every rank's row, in rank order.
    return in_own_session(lambda mine: hvd.allgather(mine[None]), row)


def in_own_session(collective, value):
  """collective(tensor) run once on `value` (numpy) in a graph and session
  of their own, outside the job's graph (the process's one config); numpy."""
  value = np.asarray(value)
  with tf1.Graph().as_default(), tf1.Session(
      config=devices.session_config()) as session:
    fed = tf1.placeholder(tf1.as_dtype(value.dtype), value.shape)
    return session.run(collective(fed), {fed: value})
