"""The one seam between the runtime and the collectives: each trainer picks
one of these in its entry point and hands it in; the runtime never sees the
hvd module or the strategy.

  horovod_collectives  Horovod's: eager, and in a TF1 graph
  strategy_collectives  tf.distribute's (legacy_hvd.train_mwms)
  no_horovod      the part of Horovod's API the TF1 job uses, and the
                  collectives, for one process (--nohorovod)
  stop_agreement  a stop request on any rank reaching every rank in the
                  same step
"""
