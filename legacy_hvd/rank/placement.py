"""CPU placement of one of several local ranks: its cores and thread pools.

    placement = place_local_rank(local_rank, local_size, pin=True,
                                 intra_op_threads=0, inter_op_threads=0)
    placement.cores, placement.intra_op_threads, placement.inter_op_threads
    describe(placement, rank, local_rank, local_size, host, cross_rank,
             cross_size, visible_device_list)   # the rank's start line
    make_deterministic()   # --deterministic, before hvd.init()

On a GPU node each local rank gets its own GPU; on a CPU node the cores are
the shared resource. Each local rank gets its own share of them: pinned to
those cores (the CPU counterpart of one GPU per rank) and sized its thread
pools to match. Without this every rank starts one thread per core and the
kernel scheduler moves all of them across all cores, and the ranks' compute
threads crowd each other out (docs/performance.md has the measurement).
Never imports TensorFlow or Horovod (legacy_hvd/rank/devices.py turns a
Placement into TensorFlow's settings).
"""
import collections
import os

Placement = collections.namedtuple(
    "Placement", "cores pinned intra_op_threads inter_op_threads")


def available_cores():
  """Sorted ids of the cores this process may run on."""
  try:
    return sorted(os.sched_getaffinity(0))
  except AttributeError:  # not Linux
    return list(range(os.cpu_count() or 1))


def share_of_cores(cores, local_rank, local_size):
  """The cores of `cores` that local rank `local_rank` of `local_size` gets.

  With at least as many cores as local ranks, each rank gets a contiguous,
  disjoint slice (sizes differ by at most one). With fewer, ranks share:
  rank r gets the single core r * len(cores) // local_size, so 4 ranks on
  2 cores run two to a core.
  """
  n = len(cores)
  if local_size <= n:
    return cores[local_rank * n // local_size:
                 (local_rank + 1) * n // local_size]
  return [cores[local_rank * n // local_size]]


def threads():
  """The ids of this process's threads now. Taken just before hvd.init(),
  they are the threads to pin: Horovod's and Gloo's, which hvd.init()
  starts, are not among them."""
  return {int(task) for task in os.listdir("/proc/self/task")}


def pin_process(cores, tasks=None):
  """Restricts the threads `tasks` (default: all) of this process to `cores`.

  sched_setaffinity(0) moves only the calling thread, so they are moved one
  by one. Threads started later inherit the affinity of the thread that
  starts them: the TF pools and tf.data threads the main thread starts are
  pinned, threads Horovod's own threads start are not.
  """
  for task in threads() if tasks is None else tasks:
    try:
      os.sched_setaffinity(task, cores)
    except ProcessLookupError:   # the thread ended meanwhile
      pass


def place_local_rank(local_rank, local_size, pin=True, intra_op_threads=0,
                     inter_op_threads=0, tasks=None):
  """Pins this process to its share of the cores (if `pin`); a Placement.

  Thread counts of 0 mean one thread per core of the share: a pinned rank
  gets as many threads as it has cores; an unpinned one its fair share of
  the process's cores, at least one. `tasks`: the threads to pin (default
  all), threads() taken before hvd.init(): Horovod's background thread and
  Gloo's then run on any core, so a rank's allreduce need not wait for its
  own compute thread to yield the core.
  """
  cores = available_cores()
  share = share_of_cores(cores, local_rank, local_size)
  pinned = pin and hasattr(os, "sched_setaffinity")
  if pinned:
    pin_process(share, tasks)
  per_pool = len(share) if pinned else max(1, len(cores) // local_size)
  return Placement(share if pinned else cores, pinned,
                   intra_op_threads or per_pool, inter_op_threads or per_pool)


def describe(placement, rank, local_rank, local_size, host=None,
             cross_rank=None, cross_size=None, visible_device_list=None):
  """Every rank's start line: its host, ranks, cores, threads and GPUs.

  Rank r (local l of n): ... -- the local rank picks the cores (and the GPU,
  visible_device_list) on its host; the cross rank numbers the hosts that
  have a rank with this local rank. visible_device_list "" means all GPUs.
  """
  where = "pinned to" if placement.pinned else "unpinned, on"
  line = (f"Rank {rank} (local {local_rank} of {local_size}): {where} cores "
          f"{_ranges(placement.cores)}; "
          f"{placement.intra_op_threads} intra-op, "
          f"{placement.inter_op_threads} inter-op threads")
  if host is not None:
    line += f"; host {host}"
  if cross_rank is not None:
    line += f", cross rank {cross_rank} of {cross_size}"
  if visible_device_list is not None:
    line += f"; visible_device_list {visible_device_list!r}"
  return line


def _ranges(cores):
  """[0, 1, 2, 5] -> '0-2,5' (the notation of taskset and /proc)."""
  parts, start = [], None
  for i, core in enumerate(cores):
    if start is None:
      start = core
    if i + 1 == len(cores) or cores[i + 1] != core + 1:
      parts.append(str(start) if start == core else f"{start}-{core}")
      start = None
  return ",".join(parts)


def make_deterministic():
  """Same seed, same bits: deterministic TF kernels, unfused allreduces.

  Horovod fuses whichever gradients are ready in the same cycle into one
  buffer; with more than two ranks the ring allreduce then sums an element
  in an order that depends on where it lands in that buffer, i.e. on timing.
  Without fusion every tensor is reduced alone, always the same way. Must run
  before hvd.init(), which reads HOROVOD_FUSION_THRESHOLD.
  """
  from legacy_hvd.common import compat   # imports TensorFlow
  os.environ["HOROVOD_FUSION_THRESHOLD"] = "0"
  compat.enable_op_determinism()
