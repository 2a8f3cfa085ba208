"""What the trainers share, below the trainers that show every touch point
of their paths themselves.

  job              what every trainer shares: the run's plan, input,
                   progress, world line, end
  graph_job        what the TF1 graph trainers share: the step, the runtime
                   around the session
  eager_job        what the TF2 trainers share: start-up, the runtime's
                   loop around the steps, restore
  job_faults       how every trainer meets faults: the same behaviour and
                   the same lines
  keras_callbacks  the Keras fit trainer's callbacks, one per concern, and
                   their one order
  hooks            the TF1 jobs' session hooks, one small hook per concern
  periodic_eval    periodic held-out evaluation: when, and where its numbers
                   go
"""
