"""Flags for turning a checkpoint into something to serve, and using it."""
from absl import flags

EXPORT_FORMATS = ("saved_model", "frozen_graph")


def define_export(flag_values=flags.FLAGS):
  fv = {"flag_values": flag_values}
  flags.DEFINE_string(
      "out", None, "Where to write the export: a new directory (saved_model) "
      "or a new file (frozen_graph).", **fv)
  flags.DEFINE_enum(
      "format", "saved_model", EXPORT_FORMATS, "saved_model: a SavedModel "
      "directory; frozen_graph: one GraphDef file with constant weights.", **fv)
  flags.mark_flag_as_required("out", **fv)


def define_predict(flag_values=flags.FLAGS):
  fv = {"flag_values": flag_values}
  flags.DEFINE_string(
      "model", None, "An export of legacy_hvd.export: a SavedModel directory "
      "or a frozen-graph file.", **fv)
  flags.DEFINE_integer(
      "top_k", 3, "How many of the most probable classes to print per image.",
      **fv)
  flags.mark_flag_as_required("model", **fv)
  flags.register_validator("top_k", lambda v: 1 <= v <= 10,
                           message="--top_k must be between 1 and 10", **fv)
