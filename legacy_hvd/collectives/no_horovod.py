"""The part of Horovod's API the TF1 trainer uses, for one process without
Horovod (--nohorovod): identity collectives and no background thread, so
tools/benchmark.py can measure what Horovod itself costs."""
import numpy as np
import tensorflow.compat.v1 as tf

Average, Sum = "Average", "Sum"


class Compression:
  none = fp16 = None   # nothing is sent, so nothing is compressed


def init():
  pass


def rank():
  return 0


def size():
  return 1


local_rank, local_size = rank, size
cross_rank, cross_size = rank, size


def DistributedOptimizer(optimizer, **unused_horovod_options):
  return optimizer


def allreduce(tensor, op=Average):
  del op   # the sum and the average of one value are that value
  return tf.identity(tensor)


def allgather(tensor):
  return tf.identity(tensor)


def broadcast(tensor, root_rank):
  del root_rank
  return tf.identity(tensor)


class Collectives:
  """The runtime's collectives for one process, over the stand-ins above."""

  def broadcast_from_rank0(self, value):
    return int(value)

  def allgather_rows(self, row):
    return np.asarray(row)[None]

  def allgather(self, tensor):
    return allgather(tensor)

  def sum(self, tensor):
    return allreduce(tensor, op=Sum)

  def average(self, tensor, name=None):
    del name
    return allreduce(tensor)
