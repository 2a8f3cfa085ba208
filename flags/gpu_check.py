"""Flags of the first-node check (python -m legacy_hvd.launch.gpu_check)."""
from absl import flags

MOST_STEPS = 500   # a check, not a training run: a few hundred steps at most


def define_gpu_check(flag_values=flags.FLAGS):
  fv = {"flag_values": flag_values}
  flags.DEFINE_enum(
      "device", "gpu", ["gpu", "cpu"], "gpu: the check of this node's GPUs. "
      "cpu: checks the check itself, on CPU (np=2, the allreduce on Gloo).",
      **fv)
  flags.DEFINE_integer(
      "np", None, "Ranks to run, one per GPU. Unset: every GPU of this host "
      "(2 with --device=cpu).", **fv)
  flags.DEFINE_integer(
      "steps", 200, f"Steps of the main job (2 to {MOST_STEPS}); the bare "
      "loop runs as many.", **fv)
  flags.DEFINE_string(
      "data_dir", None, "The trainer's --data_dir. Unset: the Keras cache or "
      "the generated dataset, as the trainer finds them.", **fv)
  flags.DEFINE_string(
      "out", None, "A new or empty directory for the job's model_dir, its "
      "output, the timeline and the bare loop's step log. Unset: a new "
      "directory under the system's temporary directory.", **fv)
  flags.register_validator(
      "np", lambda v: v is None or v >= 2,
      message="--np must be at least 2: the check is of an allreduce between "
      "ranks", **fv)
  flags.register_validator(
      "steps", lambda v: 2 <= v <= MOST_STEPS,
      message=f"--steps must be 2 to {MOST_STEPS}", **fv)
