"""What each rank checks and sets up around hvd.init(): its flags and data,
its cores and GPU, its place in the world.

  startup         the checks before and just after hvd.init()
  config_checks   flag values that are each valid but impossible together
  placement       CPU placement of a local rank: its cores, its thread pools
  devices         where a rank runs, as TensorFlow is told
  world           this process's ranks, and what depends on their number
  cluster         tf.distribute's cluster: the workers' addresses, its start
"""
