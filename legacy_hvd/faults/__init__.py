"""The fault mechanisms below the trainers: finding a lost host or a stuck
rank, ending a stuck rank, and a write that fails in the model directory.
No Horovod: the trainers' responses to faults are training.job_faults.

  roster             where every rank runs; which ranks are lost, in the
                     words of the error line
  loss_watch         after a failed collective or the launcher's stop: one
                     survivor names the loss, every rank ends
  probes             what ranks send each other on their probe ports; the
                     probe that tells a running rank from a lost one
  answer_server      this rank's probe port, answered from a thread
  keepers            each rank's keeper, started beside it; asked to end a
                     stuck rank
  stuck_rank_killer  the process beside each rank that ends it when it is
                     stuck
  failed_writes      a write that fails in the model directory: one line,
                     partial files removed
"""
