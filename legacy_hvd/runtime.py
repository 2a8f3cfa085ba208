"""Per-process TensorFlow runtime settings for one of several local ranks.

    intra, inter = cpu_threads(local_size, flags_intra, flags_inter)
    make_deterministic()   # --deterministic, before hvd.init()

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



def make_deterministic():
  """Same seed, same bits: deterministic TF kernels, unfused allreduces.

  Horovod fuses whichever gradients are ready in the same cycle into one
  buffer; with more than two ranks the ring allreduce then sums an element
  in an order that depends on where it lands in that buffer, i.e. on timing.
  Without fusion every tensor is reduced alone, always the same way. Must run
  before hvd.init(), which reads HOROVOD_FUSION_THRESHOLD.
  """
  import tensorflow as tf
  os.environ["HOROVOD_FUSION_THRESHOLD"] = "0"
  tf.config.experimental.enable_op_determinism()
