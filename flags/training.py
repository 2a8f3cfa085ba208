"""Flags for the optimisation schedule: batch, learning rate, steps, outputs,
evaluation.
"""
from absl import flags

OPTIMIZERS = ("adam", "momentum", "sgd")
LR_SCALINGS = ("linear", "sqrt", "none")
POSITIVE_INTEGERS = ("batch_size", "epochs", "log_every_n_steps",
                     "save_checkpoints_steps")


def define_training(flag_values=flags.FLAGS):
  fv = {"flag_values": flag_values}
  flags.DEFINE_integer(
      "batch_size", 64, "Examples per worker per step; the global batch is "
      "batch_size x number of workers.", **fv)
  flags.DEFINE_float(
      "lr", 0.001, "Base learning rate for one worker, before --lr_scaling "
      "multiplies it.", **fv)
  flags.DEFINE_enum(
      "lr_scaling", "linear", LR_SCALINGS, "How the base rate grows with the "
      "number of workers N: linear (lr x N), sqrt (lr x sqrt(N)) or none.",
      **fv)
  flags.DEFINE_float(
      "warmup_epochs", 0.0, "Epochs over which the rate rises linearly from "
      "the unscaled --lr to the scaled rate (Goyal et al. 2017); 0: none.",
      **fv)
  flags.DEFINE_integer(
      "epochs", 10, "Passes over the training set; the default when "
      "--max_steps is not given (giving both is an error).", **fv)
  flags.DEFINE_integer(
      "max_steps", None, "Global step to stop at (one step = one batch on "
      "every worker); instead of --epochs.", **fv)
  flags.DEFINE_enum(
      "optimizer", "adam", OPTIMIZERS, "adam (Adam), momentum (momentum 0.9) "
      "or sgd (plain gradient descent).", **fv)
  flags.DEFINE_float(
      "adam_epsilon", None, "Adam's epsilon; unset: the implementation's own "
      "default (1e-8 for tf.compat.v1.train, 1e-7 for Keras).", **fv)
  flags.DEFINE_integer(
      "seed", 1234, "Seed for the initial weights and the data shuffle; the "
      "same seed gives the same initial weights and data order.", **fv)
  flags.DEFINE_integer(
      "log_every_n_steps", 50, "Rank 0 logs loss, accuracy, learning rate "
      "and images/sec, and writes summaries, every this many steps.", **fv)
  flags.DEFINE_integer(
      "save_checkpoints_steps", 500, "Rank 0 saves a checkpoint every this "
      "many steps, and at the end.", **fv)
  flags.DEFINE_integer(
      "eval_every_n_steps", 0, "Every this many global steps, every rank "
      "scores its shard of the test set and the counts are summed across "
      "ranks: rank 0 logs the held-out loss and accuracy and writes them to "
      "TensorBoard (<model_dir>/eval), results.json (evaluations) and the "
      "step log; 0: only the evaluation at the end.", lower_bound=0, **fv)

  for name in POSITIVE_INTEGERS:
    flags.register_validator(name, lambda v: v >= 1,
                             message=f"--{name} must be a positive integer",
                             **fv)
  flags.register_validator("max_steps", lambda v: v is None or v >= 1,
                           message="--max_steps must be a positive integer",
                           **fv)
  flags.register_validator("lr", lambda v: v > 0,
                           message="--lr must be a positive number", **fv)
  flags.register_validator("adam_epsilon", lambda v: v is None or v > 0,
                           message="--adam_epsilon must be a positive number",
                           **fv)
  flags.register_validator("warmup_epochs", lambda v: v >= 0,
                           message="--warmup_epochs must be zero or positive",
                           **fv)

  @flags.multi_flags_validator(
      ["epochs", "max_steps"], message="--epochs and --max_steps both set: "
      "each says how long to train (--max_steps would win); give one", **fv)
  def _one_length(values):
    return values["max_steps"] is None or not flag_values["epochs"].present

  @flags.multi_flags_validator(
      ["warmup_epochs", "epochs", "max_steps"],
      message="--warmup_epochs must be shorter than --epochs", **fv)
  def _warmup_inside_training(values):
    # With --max_steps the run's length in epochs is known only from the data.
    return values["max_steps"] is not None or (
        values["warmup_epochs"] < values["epochs"])
