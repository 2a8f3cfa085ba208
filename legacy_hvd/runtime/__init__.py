"""The rank's runtime: where it runs, what it checks at start-up, the TF1
session hooks, the stop agreement, periodic evaluation, and what depends on
the world size.

  devices         where a rank runs, as TensorFlow is told: its session
                  config, its cores
  placement       CPU placement of a local rank: its cores, its thread pools
  startup         the checks before and just after hvd.init()
  config_checks   flag values that are each valid but impossible together
  world           this process's ranks, and what depends on their number
  hooks           the TF1 jobs' session hooks, one small hook per concern
  stop_agreement  a stop request on any rank reaching every rank in the
                  same step
  periodic_eval   periodic held-out evaluation: when, and where its numbers
                  go
  no_horovod      the part of Horovod's API the TF1 job uses, for
                  --nohorovod
  horovod_collectives  the runtime's collectives, Horovod's (eager, graph)
  strategy_collectives  the same, tf.distribute's (legacy_hvd.train_mwms)
"""
