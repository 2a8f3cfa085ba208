"""tf.distribute's collectives, horovod_collectives.py's twin for train_mwms
(one replica per worker; every worker calls each in the same order). Never
imports Horovod: train_mwms runs where Horovod does not build."""
import tensorflow.compat.v2 as tf

SUM = tf.distribute.ReduceOp.SUM
MEAN = tf.distribute.ReduceOp.MEAN
EAGER_WARNING = "eagerly has significant overhead"
COORDINATOR_TRACE = "Error reported to Coordinator"


class Collectives:
  """The collectives of `strategy` for the worker whose rank is `rank`."""

  # The chief holds the coordination service the others heartbeat to.
  chief_exits_last = True

  def __init__(self, strategy, rank):
    self._strategy = strategy
    self._rank = rank
    # Run eagerly, a replica function warns that it is slow: these run
    # between steps (the step itself is a tf.function), where it is not.
    tf.get_logger().addFilter(
        lambda record: EAGER_WARNING not in record.getMessage())
    # A peer lost in one of these logs a traceback before the error reaches
    # the runtime, which says it in one line.
    tf.get_logger().addFilter(
        lambda record: not record.getMessage().startswith(COORDINATOR_TRACE))

  def broadcast_from_rank0(self, value):
    # tf.distribute: no broadcast between replicas: rank 0's value plus the
    # others' zeros is rank 0's, exactly.
    return int(self.sum(tf.constant(value if self._rank == 0 else 0,
                                    tf.int64)))

  def broadcast_variables(self, variables):
    """hvd.broadcast_variables' twin, one batched sum per dtype."""
    # tf.distribute: rank 0's values plus the others' zeros, as above; by
    # dtype in the list's order (Keras 3's are strings, and a set of strings
    # has another order in each process: the workers' sums would differ).
    by_dtype = {}
    for variable in variables:
      by_dtype.setdefault(tf.as_dtype(variable.dtype), []).append(variable)
    for these in by_dtype.values():
      values = self.sum([v if self._rank == 0 else tf.zeros_like(v)
                         for v in these])
      for variable, value in zip(these, values):
        variable.assign(value)

  def allgather(self, tensor):
    # tf.distribute: every worker's rows, in rank order; its collectives
    # gather 32- and 64-bit numbers only (the roster's rows are bytes).
    wide = tf.cast(tensor, tf.int32) if tensor.dtype == tf.uint8 else tensor
    gathered = self._in_replica(
        lambda ctx: ctx.all_gather(_on_device(wide), axis=0))
    return tf.cast(gathered, tensor.dtype)

  def allgather_rows(self, row):
    """uint8 row [n] (numpy) -> every worker's rows [size, n]."""
    return self.allgather(tf.constant(row[None])).numpy()

  def sum(self, tensors):
    # tf.distribute: the sum over all workers (the test set's counts).
    return self._in_replica(
        lambda ctx: ctx.all_reduce(SUM, _on_device(tensors)))

  def average(self, tensor, name=None):
    del name   # Horovod's op name; tf.distribute orders its collectives
    # tf.distribute: the average over all workers (the stop requests).
    return self._in_replica(
        lambda ctx: ctx.all_reduce(MEAN, _on_device(tensor)))

  def _in_replica(self, reduce):
    """reduce(replica context) in this worker's replica: directly inside
    strategy.run, else in a replica function of its own."""
    context = tf.distribute.get_replica_context()
    if context is not None and context.strategy is self._strategy:
      return reduce(context)
    results = self._strategy.run(
        lambda: reduce(tf.distribute.get_replica_context()))
    return tf.nest.map_structure(
        lambda r: self._strategy.experimental_local_results(r)[0], results)


def _on_device(tensors):
  """`tensors` made in the replica: a step's argument has no device, and
  the strategy reduces to where its input is."""
  return tf.nest.map_structure(tf.identity, tensors)
