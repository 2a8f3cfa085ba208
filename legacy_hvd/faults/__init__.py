"""The fault mechanisms below the trainers: finding a lost host or a stuck
rank, ending a stuck rank, and a write that fails in the model directory.
No Horovod: the trainers' responses to faults are training.job_faults.

  peers              where every rank runs; which host a job lost, which
                     rank is stuck
  stuck_rank_killer  the process beside each rank that ends it when it is
                     stuck
  failed_writes      a write that fails in the model directory: one line,
                     partial files removed
"""
