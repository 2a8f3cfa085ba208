"""The one seam between the runtime and the collectives: each entry point picks
one and hands it in; the runtime never sees the hvd module or the strategy.

  horovod_collectives  Horovod's: eager, and in a TF1 graph
  strategy_collectives  tf.distribute's (legacy_hvd.train_mwms)
  no_horovod      Horovod's API and collectives for one process (--nohorovod)
  stop_agreement  a stop request on any rank reaching all in the same step
"""
