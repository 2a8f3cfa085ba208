"""Checkpoints: finding, checking and restoring them, and moving a model
directory between the trainers' four checkpoint flavours. No Horovod: rank
0 does this before the others are told.

  resume       finding, checking and restoring checkpoints; the step to
               resume at
  migration    another trainer's checkpoint converted on resume, or refused
               in one line
  state_proto  the `checkpoint` state file as TensorFlow's proto, parsed
               and written without its warnings
"""
