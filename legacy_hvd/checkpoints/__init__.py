"""Checkpoints found, checked, restored and moved between the trainers'
flavours. No Horovod: rank 0 does this before the others are told.

  resume       finding, checking and restoring checkpoints; the resume step
  migration    another trainer's checkpoint converted on resume, or refused
  state_proto  the `checkpoint` state file as TensorFlow's proto, no warnings
  object_checkpoints  rank 0's TF2 object checkpoints: restored, then saved
"""
