"""CPU placement of one of several local ranks: its cores and thread pools, or
every rank starts a thread per core and they crowd each other out
(docs/performance.md). Imports no TensorFlow."""
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
  """Local rank `local_rank`'s contiguous, disjoint slice of `cores` (sizes
  differ by at most one); with fewer cores than ranks, one shared core."""
  n = len(cores)
  if local_size <= n:
    return cores[local_rank * n // local_size:
                 (local_rank + 1) * n // local_size]
  return [cores[local_rank * n // local_size]]


def threads():
  """The ids of this process's threads now: taken just before hvd.init(),
  the threads to pin, without Horovod's and Gloo's."""
  return {int(task) for task in os.listdir("/proc/self/task")}


def pin_process(cores, tasks=None):
  """Restricts threads `tasks` (default: all) to `cores`, one by one, as
  sched_setaffinity(0) moves only the caller. Threads started later inherit
  their starter's: the TF and tf.data pools are pinned, Horovod's are not."""
  for task in threads() if tasks is None else tasks:
    try:
      os.sched_setaffinity(task, cores)
    except ProcessLookupError:   # the thread ended meanwhile
      pass


def place_local_rank(local_rank, local_size, pin=True, intra_op_threads=0,
                     inter_op_threads=0, tasks=None):
  """Pins this process to its share of the cores (if `pin`); a Placement.
  Thread counts of 0: one per core of the share. `tasks`, taken before
  hvd.init(), leave Horovod's and Gloo's threads on any core, so an
  allreduce need not wait for the rank's compute thread to yield the core."""
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
  """Every rank's start line: its host, ranks, cores, threads and GPUs (the
  cross rank numbers the hosts that have a rank with this local rank)."""
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
  """Same seed, same bits: deterministic TF kernels, unfused allreduces
  (fused, with more than two ranks, an element's sum order depends on where
  it lands in the buffer, i.e. on timing). Before hvd.init(), which reads
  HOROVOD_FUSION_THRESHOLD."""
  from legacy_hvd.common import compat   # imports TensorFlow
  os.environ["HOROVOD_FUSION_THRESHOLD"] = "0"
  compat.enable_op_determinism()
