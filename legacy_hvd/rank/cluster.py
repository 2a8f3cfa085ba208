"""tf.distribute's cluster as the MWMS trainers start it."""
import contextlib
import os
import signal
import threading

import tensorflow.compat.v2 as tf
from tensorflow.python.eager import context   # its key-values: no public API

from legacy_hvd.common import cli

# Under Slurm, job J's workers on a node listen on ports SLURM_PORTS +
# (J mod SLURM_JOBS_APART) x SLURM_TASKS_PER_NODE + k, k its task on the
# node: jobs whose ids differ by less than SLURM_JOBS_APART never share a
# port (SlurmClusterResolver's default, 8888 for every job, would).
SLURM_PORTS = 20000
SLURM_JOBS_APART = 1000
SLURM_TASKS_PER_NODE = 32   # the most tasks a node runs of one job
PREEMPTION_NOTICE = "TF_DEFAULT_PREEMPTION_NOTICE_KEY"   # set on SIGTERM


def cluster_resolver(gpus_per_node):
  """tf.distribute's view of the cluster: every worker's host:port and this
  worker's index. Worker 0, the chief, is rank 0."""
  if "SLURM_STEP_NODELIST" in os.environ and "TF_CONFIG" not in os.environ:
    # tf.distribute: under srun (legacy_hvd.launch.slurm), every task a worker,
    # read from srun's environment; the ports from the job's id, so that
    # two jobs on one node do not collide. It numbers a node's tasks by
    # their GPUs, and would set CUDA_VISIBLE_DEVICES: one "GPU" a task, and
    # none set (main pins each worker's GPU itself; a CPU node has none).
    job = int(os.environ.get("SLURM_JOB_ID", "0"))
    return tf.distribute.cluster_resolver.SlurmClusterResolver(
        port_base=SLURM_PORTS + job % SLURM_JOBS_APART * SLURM_TASKS_PER_NODE,
        gpus_per_node=max(gpus_per_node, SLURM_TASKS_PER_NODE),
        gpus_per_task=1, auto_set_gpu=False)
  # tf.distribute: else from TF_CONFIG (legacy_hvd.launch.workers sets it);
  # without one, this worker alone.
  return tf.distribute.cluster_resolver.TFConfigClusterResolver()


@contextlib.contextmanager
def ending_if_the_cluster_fails(workers, rank):
  """Around the strategy's start: a worker that cannot listen on its port
  says so in one line; rank 0, whose coordination service the others join,
  says that one of them did not (the launcher ends them all)."""
  try:
    yield
  except tf.errors.UnknownError as e:
    if "Could not start gRPC server" not in str(e):
      raise
    cli.fail(f"rank {rank} could not listen on {workers[rank]}: its port is "
             "taken or its host name is not this host's; expected a free "
             "port (legacy_hvd.launch.workers --port) on a name of this host",
             reporter=True)
  except tf.errors.UnavailableError as e:
    if rank == 0:
      cli.fail("the workers did not all start: "
               f"{str(e).splitlines()[0][:200]}; expected every worker of "
               f"{','.join(workers)} up (the first failure's line says why)",
               reporter=True)
    cli.exit_quietly()


def take_back_sigterm(stop_signals):
  """After the strategy's start, whose pre-emption notifier took SIGTERM for
  itself: SIGTERM is the job's stop again, and one the notifier took
  meanwhile reaches `stop_signals` through its notice (on every worker)."""
  stop_signals.install()

  def watch():
    try:
      context.context().get_config_key_value(PREEMPTION_NOTICE)
    except tf.errors.OpError:
      return   # no coordination service (one worker), or the job ended
    stop_signals.receive(signal.SIGTERM)
  threading.Thread(target=watch, name="preemption_notice", daemon=True).start()
