"""The launcher side, as Horovod keeps its own in horovod/runner: the
launchers (entry points, `python -m legacy_hvd.launch.NAME`) beside the
pieces they share. Never imports TensorFlow or Horovod's frameworks, not
even through another module.

  slurm        runs a trainer under Slurm, every rank an srun task (the
               batch script's side)
  slurm_task   each srun task's side: becomes its rank, execs the trainer
  supervise    runs a trainer and relaunches it on the hosts left when one
               is lost (for clusters without a scheduler)
  preflight    will the job start on these hosts?
  workers      starts a tf.distribute job's workers as horovodrun starts
               ranks, each told the cluster by TF_CONFIG

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
"""
