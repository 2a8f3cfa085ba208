"""The launchers beside the pieces they share (as Horovod's horovod/runner).
Never imports TensorFlow or Horovod's frameworks, even indirectly.

  slurm        runs a trainer under Slurm, every rank an srun task
  slurm_task   each srun task's side: becomes its rank, execs the trainer
  supervise    relaunches a trainer on the hosts left when one is lost
  preflight    will the job start on these hosts?
  gpu_check    the first-node check: rank k on GPU k, NCCL, equal weights
  workers      starts a tf.distribute job's workers, told by TF_CONFIG

  hostlists    `-H` and hostfiles read as horovodrun reads them
  host_pool    the supervisor's hosts for its next launch
  run_outcome  how a supervised run or an srun step ended
  job_evidence  what a job's own logs, timeline and results say
  leftovers    an earlier run's processes, found by their mark
  writable     what a job writes first, checked before any rank starts
  slurm_healing  a Slurm job's restarts after losses, kept across requeues
  container    the Slurm launcher's tasks in an image (ch-run)
"""
