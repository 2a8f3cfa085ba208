"""What the trainers share, below the four entry points that show every
Horovod touch point themselves.

  job              what every trainer shares: the run's plan, input,
                   progress, world line, end
  graph_job        what the two TF1 graph trainers share: start-up, the
                   runtime around the session
  eager_job        what the two TF2 trainers share: start-up, the runtime
                   around the steps, restore
  job_faults       how every trainer meets faults: the same behaviour and
                   the same lines
  keras_callbacks  the Keras fit trainer's callbacks, one per concern
"""
