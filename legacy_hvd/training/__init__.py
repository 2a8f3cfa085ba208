"""What the trainers share, below the entry points that show every touch
point of their paths themselves.

  job              every trainer's plan, input, progress, world line, end
  graph_job        the TF1 graph trainers' step and runtime around the session
  eager_job        the TF2 trainers' start-up, runtime loop or fit, end
  job_faults       how every trainer meets faults: same behaviour, same lines
  keras_callbacks  the Keras fit trainer's callbacks, in their one order
  hooks            the TF1 jobs' session hooks, one small hook per concern
  periodic_eval    periodic held-out evaluation: when, and where it goes
"""
