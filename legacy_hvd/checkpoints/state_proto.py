"""The `checkpoint` state file as TensorFlow's private CheckpointState proto:
state_proto.parse_checkpoint_state raises state_proto.CheckpointStateError
where tf.train's reader logs and returns None (a one-line error must name
the file), and state_proto.checkpoint_state_text writes it without the
deprecation warning."""
from google.protobuf import text_format


# What parse_checkpoint_state raises for text that is no CheckpointState.
CheckpointStateError = text_format.ParseError


def parse_checkpoint_state(text):
  """The CheckpointState of a state file's text, as
  tf.train.get_checkpoint_state parses it."""
  state = _checkpoint_state_pb2().CheckpointState()
  text_format.Merge(text, state)
  return state


def checkpoint_state_text(names):
  """A state file's text naming `names` (oldest first), as
  tf.train.update_checkpoint_state writes it."""
  state = _checkpoint_state_pb2().CheckpointState(
      model_checkpoint_path=names[-1], all_model_checkpoint_paths=names)
  return text_format.MessageToString(state)


def _checkpoint_state_pb2():
  # Private, and at this path from TF 1.15 to 2.21.
  from tensorflow.python.training import checkpoint_state_pb2  # pylint: disable=import-outside-toplevel
  return checkpoint_state_pb2
