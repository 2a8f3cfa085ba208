"""Per-process TensorFlow runtime settings for one of several local ranks.

    intra, inter = cpu_threads(local_size, flags_intra, flags_inter)

On a GPU node each local rank gets its own GPU; on a CPU node the cores are
the shared resource, so each local rank gets its share of them as threads
(without this every rank starts one thread per core and they fight).
"""
import os


def available_cores():
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:  # not Linux
    return os.cpu_count() or 1


def cpu_threads(local_size, intra_op_threads=0, inter_op_threads=0):
  """(intra, inter) thread counts; 0 means this rank's share of the cores."""
  share = max(1, available_cores() // local_size)
  return (intra_op_threads or share, inter_op_threads or share)

