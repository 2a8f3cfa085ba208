"""absl flag definitions for legacy-hvd, one module per concern.

    from flags import define_trainer_flags
    define_trainer_flags()          # what both trainers (TF1, TF2) accept
    config = Config.from_flags(FLAGS)

    TRAINERS["legacy_hvd.train_tf2"]   # what that trainer defines
    values = parse_trainer_flags("legacy_hvd.train_tf2", ["--lr=0.1"])
                                    # a launcher judging a trainer's flags

Modules: training (schedule and optimizer), data (input), output (model_dir),
performance (Horovod and CPU knobs). Each `define_*()` registers its flags and
validators on absl's global FLAGS, or on the FlagValues it is given; an
entry point converts the parsed values once into a frozen
`legacy_hvd.common.config.Config`.
"""
from absl import flags

from flags import data
from flags import estimator
from flags import keras
from flags import mwms
from flags import output
from flags import performance
from flags import tf2
from flags import training


def define_trainer_flags(flag_values=flags.FLAGS):
  training.define_training(flag_values)
  data.define_data(flag_values)
  output.define_output(flag_values)
  performance.define_performance(flag_values)


# Every trainer and the flags its run() defines: the launchers take a
# trainer by these names (legacy_hvd.launch.slurm --module) and judge its flags
# before they start any rank (tests/unit/test_flags.py checks that each
# trainer defines exactly these).
TRAINERS = {
    "legacy_hvd.train": (define_trainer_flags,),
    "legacy_hvd.train_tf2": (define_trainer_flags, tf2.define_tf2),
    "legacy_hvd.train_keras": (define_trainer_flags, keras.define_keras),
    "legacy_hvd.train_estimator": (define_trainer_flags,
                                   estimator.define_estimator),
    "legacy_hvd.train_mwms": (define_trainer_flags, mwms.define_mwms),
}


def parse_trainer_flags(module, argv):
  """`argv`, a trainer's arguments, parsed with `module`'s definitions and
  validators (TRAINERS) on a FlagValues of its own, as the trainer would
  parse them; flags.Error, its str the one line, for what the trainer
  would refuse."""
  values = flags.FlagValues()
  for define in TRAINERS[module]:
    define(values)
  rest = values([module] + list(argv))
  if len(rest) > 1:
    raise flags.Error("unexpected argument {!r}; flags take the form "
                      "--name=value".format(rest[1]))
  return values
