"""Where a rank runs, as TensorFlow is told: its GPU, its cores, its threads.

    own_threads = placement.threads()          # before hvd.init()
    hvd.init(); ranks = world.Ranks.of(hvd)
    config_proto = tf.compat.v1.ConfigProto()    # the entry point's, and
    config_proto.gpu_options.visible_device_list = str(hvd.local_rank())
    devices.place_graph_rank(config, ranks, config_proto, own_threads)
    devices.session_config()                   # the same, for every session
    devices.place_eager_rank(config, ranks, own_threads)   # the TF2 variants

The entry point makes the graph sessions' tf.ConfigProto (its GPU: a
touch point it shows), place_graph_rank sizes its thread pools and keeps
it, and every session of the process (the training session and the
helper sessions before it, the evaluation tool's, the bare loop's) takes
it from here: the process's first session sizes TensorFlow's global
inter-op pool for all later ones, so a helper session made with other
settings would size the training session's pool. The eager TF2 trainers
have no session: they pin their GPU themselves (a touch point they show),
and place_eager_rank sets their cores and threads through tf.config before
the eager context starts. Each rank logs one
start line (placement.describe). Never imports Horovod: the entry point
passes its ranks.
"""
from absl import logging
import tensorflow as tf

from legacy_hvd.faults import roster
from legacy_hvd.rank import placement

_session_config = None   # the process's, once place_graph_rank made it


def place_graph_rank(config, ranks, config_proto, own_threads=None):
  """Pins this rank to its cores and sizes the thread pools of
  `config_proto` (the entry point's tf.ConfigProto, its GPU chosen) to
  them; keeps it as the process's one session config, and returns it.

  config: a legacy_hvd.common.config.Config (or anything with cpu_affinity,
  intra_op_threads and inter_op_threads); ranks: a world.Ranks.
  """
  global _session_config
  placed = _place(config, ranks, own_threads)
  config_proto.intra_op_parallelism_threads = placed.intra_op_threads
  config_proto.inter_op_parallelism_threads = placed.inter_op_threads
  _session_config = config_proto
  _log_start_line(placed, ranks, config_proto.gpu_options.visible_device_list)
  return config_proto


def session_config():
  """The tf.ConfigProto place_graph_rank kept: every session uses it."""
  if _session_config is None:
    raise RuntimeError("devices.session_config() before place_graph_rank()")
  return _session_config


def place_eager_rank(config, ranks, own_threads=None):
  """The eager TF2 variants' place_graph_rank, through tf.config: this
  rank's cores and thread pools, and its start line. The trainer has pinned
  its GPU to ranks.local_rank already (Horovod's touch point, in its own
  text); both before the eager context starts."""
  placed = _place(config, ranks, own_threads)
  tf.config.threading.set_intra_op_parallelism_threads(
      placed.intra_op_threads)
  tf.config.threading.set_inter_op_parallelism_threads(
      placed.inter_op_threads)
  _log_start_line(placed, ranks, str(ranks.local_rank))


def _place(config, ranks, own_threads):
  # Horovod: on CPU the cores are what the local ranks share: pin each rank
  # to its own part and size its thread pools to it (`own_threads`, taken
  # before hvd.init(): Horovod's threads stay free).
  return placement.place_local_rank(
      ranks.local_rank, ranks.local_size, config.cpu_affinity,
      config.intra_op_threads, config.inter_op_threads, own_threads)


def _log_start_line(placed, ranks, visible_device_list):
  logging.info("%s", placement.describe(
      placed, ranks.rank, ranks.local_rank, ranks.local_size,
      host=roster.host_name(), cross_rank=ranks.cross_rank,
      cross_size=ranks.cross_size, visible_device_list=visible_device_list))
