"""CIFAR-10 found, read and fed to TF. No Horovod: ranks and sizes come in
as plain ints.

  cifar10         reads CIFAR-10 from any official layout into validated arrays
  embedded        the generated CIFAR-10-shaped dataset
  pipeline        tf.data pipelines over the arrays, one shard per rank
  download        downloads, verifies and extracts the official archive
  tar_extraction  an archive extracted safely on every supported Python
"""
