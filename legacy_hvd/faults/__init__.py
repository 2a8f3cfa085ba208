"""A lost host or stuck rank found and ended, a failed write in the model
directory. No Horovod: the trainers' responses are training.job_faults.

  roster             where every rank runs; which ranks are lost, in words
  loss_watch         one survivor names the loss, every rank ends
  probes             the probe wire format; running told from lost
  answer_server      this rank's probe port, answered from a thread
  keepers            each rank's keeper, started beside it; asked to end it
  stuck_rank_killer  the process beside each rank that ends it when stuck
  failed_writes      a failed write in the model directory: one line
"""
