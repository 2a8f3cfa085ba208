"""Flags for where a run lives on disk."""
from absl import flags


def define_output(flag_values=flags.FLAGS):
  flags.DEFINE_string(
      "model_dir", "runs/cifar10", "Directory for checkpoints, TensorBoard "
      "summaries and results.json, written by rank 0 only. A run already "
      "there is resumed, never deleted.", flag_values=flag_values)
  flags.DEFINE_string(
      "step_log", None, "Rank 0 appends one JSON line per step to this file: "
      "step, loss, learning rate, and every --log_every_n_steps steps a "
      "digest of the weights (tools/compare_paths.py reads it).",
      flag_values=flag_values)
  flags.register_validator("model_dir", bool,
                           message="--model_dir must not be empty",
                           flag_values=flag_values)


def define_results_file(flag_values=flags.FLAGS):
  flags.DEFINE_string(
      "results_file", None, "Also write the metrics as JSON to this file "
      "(rank 0 only).", flag_values=flag_values)


def model_dir_of(trainer_args):
  """The --model_dir `trainer_args` give the trainer, or its default: for the
  launchers, which read its checkpoints without parsing its other flags."""
  values = flags.FlagValues()
  define_output(values)
  values(["trainer"] + list(trainer_args), known_only=True)
  return values.model_dir
