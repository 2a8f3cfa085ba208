"""A model directory's `checkpoint` state file as TensorFlow's
CheckpointState proto: parsed and written as TensorFlow does, without its
warnings.

    state_proto.parse_checkpoint_state(text)   # the state file's proto
    state_proto.CheckpointStateError           # what it raises for other text
    state_proto.checkpoint_state_text(names)   # a state file naming `names`

The proto is private to TensorFlow (tf.train's own readers log and return
None where a one-line error must name the file, and its writer warns that
it is deprecated); legacy_hvd/common/checkpoint_state.py reads the newest
step without TensorFlow.
"""
from google.protobuf import text_format


# What parse_checkpoint_state raises for text that is no CheckpointState.
CheckpointStateError = text_format.ParseError


def parse_checkpoint_state(text):
  """The CheckpointState proto of a `checkpoint` state file's text, as
  tf.train.get_checkpoint_state parses it, but raising
  CheckpointStateError where that logs two warnings and returns None."""
  state = _checkpoint_state_pb2().CheckpointState()
  text_format.Merge(text, state)
  return state


def checkpoint_state_text(names):
  """A `checkpoint` state file's text naming the checkpoints `names`
  (oldest first, the last the newest), as tf.train.update_checkpoint_state
  writes it, without its deprecation warning."""
  state = _checkpoint_state_pb2().CheckpointState(
      model_checkpoint_path=names[-1], all_model_checkpoint_paths=names)
  return text_format.MessageToString(state)


def _checkpoint_state_pb2():
  # Private, and at this path from TF 1.15 to 2.21.
  from tensorflow.python.training import checkpoint_state_pb2  # pylint: disable=import-outside-toplevel
  return checkpoint_state_pb2
