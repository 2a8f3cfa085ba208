"""Flags for the input data."""
from absl import flags


def define_data(flag_values=flags.FLAGS):
  flags.DEFINE_string(
      "data_dir", None, "CIFAR-10 in an official layout: a "
      "cifar-10-batches-bin/ or cifar-10-batches-py/ directory, a directory "
      "holding one, or its .tar.gz archive. Unset: the Keras cache "
      "(~/.keras/datasets), else a small generated CIFAR-10-shaped dataset.",
      flag_values=flag_values)
  flags.DEFINE_boolean(
      "augment", False, "Augment training images: random 32x32 crop of the "
      "image padded by 4 pixels, and random horizontal flip.",
      flag_values=flag_values)
  flags.DEFINE_boolean(
      "synthetic", False, "Train on one fixed random batch held in memory, "
      "to measure compute and communication without the input pipeline.",
      flag_values=flag_values)
