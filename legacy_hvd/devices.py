"""Where an eager TF2 rank runs: its GPU, its cores, its thread pools.

    own_threads = runtime.threads()   # before hvd.init()
    devices.pin_devices(config, rank, local_rank, local_size, cross_rank,
                        cross_size, own_threads)   # after, before any op runs

Shared by both eager TF2 variants (legacy_hvd.train_tf2, the loop, and
legacy_hvd.train_keras, Keras fit). tf.ConfigProto and tf.Session configure
nothing there: devices and threads are set through tf.config, before the
eager context starts. Never imports Horovod: the entry point passes its ranks.
"""
from absl import logging
import tensorflow.compat.v2 as tf

from legacy_hvd import peers
from legacy_hvd import runtime


def pin_devices(config, rank, local_rank, local_size, cross_rank, cross_size,
                own_threads=None):
  # Horovod: pin each process to one GPU: the one numbered by its local rank.
  # The experimental names are the ones TF 1.15 has too.
  gpus = tf.config.experimental.list_physical_devices("GPU")
  if gpus:
    tf.config.experimental.set_memory_growth(gpus[local_rank], True)
    tf.config.experimental.set_visible_devices(gpus[local_rank], "GPU")
  # Horovod: on CPU the cores are what the local ranks share: pin each rank
  # to its own part and size its thread pools to it (`own_threads`, taken
  # before hvd.init(): Horovod's threads stay free; runtime.place_local_rank).
  placement = runtime.place_local_rank(
      local_rank, local_size, config.cpu_affinity, config.intra_op_threads,
      config.inter_op_threads, own_threads)
  tf.config.threading.set_intra_op_parallelism_threads(
      placement.intra_op_threads)
  tf.config.threading.set_inter_op_parallelism_threads(
      placement.inter_op_threads)
  logging.info("%s", runtime.describe(
      placement, rank, local_rank, local_size, host=peers.host_name(),
      cross_rank=cross_rank, cross_size=cross_size,
      visible_device_list=str(local_rank)))
