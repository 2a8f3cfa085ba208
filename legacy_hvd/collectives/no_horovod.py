"""The part of Horovod's API the TF1 trainer uses, for one process, without
Horovod: what `python -m legacy_hvd.train --nohorovod` runs on.

    hvd = no_horovod   # in legacy_hvd.train's main, instead of horovod.tensorflow

Plain TensorFlow on the trainer's own graph: hvd.init() starts no background
thread, DistributedOptimizer returns the optimizer it is given, and each
collective of a single process is the identity. tools/benchmark.py compares
this with Horovod at np=1 to measure what Horovod itself costs. Never imports
Horovod.
"""
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
  """The runtime's collectives for one process: each is the identity
  (horovod_collectives.GraphCollectives' stand-in)."""

  def broadcast_from_rank0(self, value):
    return int(value)

  def allgather_rows(self, row):
    return np.asarray(row)[None]

  def allgather(self, tensor):
    return tf.identity(tensor)

  def sum(self, tensor):
    return tf.identity(tensor)

  def average(self, tensor, name=None):
    del name
    return tf.identity(tensor)
