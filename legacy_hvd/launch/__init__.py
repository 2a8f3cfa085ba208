"""The launcher side, as Horovod keeps its own in horovod/runner: what the
supervisor, the Slurm launcher and the pre-flight check need before and
between runs. Never imports TensorFlow or Horovod, not even through another
module.

  hostlists    `-H` and hostfiles read as horovodrun reads them; which
               host is this one
  host_pool    the supervisor's hosts for its next launch: reachable, less
               the hosts lost
  run_outcome  how a supervised run or an srun step ended, from what its
               ranks wrote
  leftovers    the processes an earlier run left on its hosts, found by
               their mark; a relaunch waits for them to be gone
  slurm_healing  a Slurm job's restarts after losses, kept across
               requeues; the requeue without the failed node
  container    the Slurm launcher's tasks in an image (ch-run): the image
               and its mounts judged on the node, the task's command
  workers      a tf.distribute job's workers started as horovodrun starts
               ranks, each told the cluster by TF_CONFIG
"""
