"""The rank's runtime: where it runs, its start-up checks, the TF1 session
hooks, the stop agreement, periodic evaluation, the collectives.

  devices               where a rank runs, as TensorFlow is told
  placement             CPU placement of a local rank: cores, thread pools
  startup               the checks before and just after hvd.init()
  config_checks         flag values each valid but impossible together
  world                 this process's ranks, and what depends on their number
  hooks                 the TF1 jobs' session hooks, one per concern
  stop_agreement        a stop request on any rank reaching all in one step
  periodic_eval         periodic held-out evaluation: when, and where it goes
  no_horovod            Horovod's API for one process, for --nohorovod
  horovod_collectives   the runtime's collectives, Horovod's (eager, graph)
  strategy_collectives  the same, tf.distribute's (legacy_hvd.train_mwms)
"""
