"""Where a rank runs, as TensorFlow is told: its GPU, its cores, its threads.
One ConfigProto for every session: the first sizes TF's global inter-op pool."""
import os

from absl import logging
import tensorflow as tf

from legacy_hvd.common import cli
from legacy_hvd.faults import roster
from legacy_hvd.rank import placement

_session_config = None   # the process's, once place_graph_rank made it


def local_gpu(config, ranks):
  """This rank's GPU among those TensorFlow sees on its host (the one its
  local rank numbers), or None on a host without GPUs. Every rank of a host
  judges alike, so its local rank 0 says in one line what is wrong: fewer
  GPUs than ranks (one would have none, or share), or none at all under
  --require_gpu (the job would train on the CPU, slowly and silently)."""
  gpus = tf.config.experimental.list_physical_devices("GPU")
  if not gpus:
    if config.require_gpu:
      cli.fail(f"--require_gpu: TensorFlow {tf.version.VERSION} sees no GPU "
               f"(built with CUDA: {tf.test.is_built_with_cuda()}; "
               "CUDA_VISIBLE_DEVICES "
               f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}); "
               "expected one GPU per rank of this host with its driver, and "
               "the GPU stack (docs/gpu.md), or no --require_gpu to train on "
               "the CPU")
    return None
  if ranks.local_size > len(gpus):
    cli.fail(f"{ranks.local_size} ranks on this host and {len(gpus)} GPU"
             f"{'s' * (len(gpus) > 1)} TensorFlow sees; expected one GPU per "
             f"rank: at most {len(gpus)} ranks a host (-H HOST:{len(gpus)}), "
             "each seeing every GPU of its host (not one a task, as Slurm's "
             "--gpus-per-task and --gpu-bind give)")
  return gpus[ranks.local_rank]


def place_graph_rank(config, ranks, config_proto, own_threads=None):
  """Pins this rank to its cores, sizes `config_proto`'s thread pools to
  them and keeps it as the process's one session config; returns it."""
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
  """place_graph_rank for the eager trainers (their GPU pinned already),
  through tf.config, before the eager context starts."""
  placed = _place(config, ranks, own_threads)
  tf.config.threading.set_intra_op_parallelism_threads(
      placed.intra_op_threads)
  tf.config.threading.set_inter_op_parallelism_threads(
      placed.inter_op_threads)
  _log_start_line(placed, ranks, str(ranks.local_rank))


def _place(config, ranks, own_threads):
  # Horovod: on CPU pin each rank to its share of the cores, its pools sized to
  # it (`own_threads`, taken before hvd.init(): Horovod's threads stay free).
  return placement.place_local_rank(
      ranks.local_rank, ranks.local_size, config.cpu_affinity,
      config.intra_op_threads, config.inter_op_threads, own_threads)


def _log_start_line(placed, ranks, visible_device_list):
  logging.info("%s", placement.describe(
      placed, ranks.rank, ranks.local_rank, ranks.local_size,
      host=roster.host_name(), cross_rank=ranks.cross_rank,
      cross_size=ranks.cross_size, visible_device_list=visible_device_list))
