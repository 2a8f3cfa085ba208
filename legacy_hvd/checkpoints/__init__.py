"""Checkpoints: finding, checking and restoring them, and moving a model
directory between the trainers' checkpoint flavours. No Horovod: rank 0
does this before the others are told.

  resume       finding, checking and restoring checkpoints; the resume step
  migration    another trainer's checkpoint converted on resume, or refused
  state_proto  the `checkpoint` state file as TensorFlow's proto, no warnings
"""
