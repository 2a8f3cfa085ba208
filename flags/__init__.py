"""absl flag definitions for legacy-hvd, one module per concern.

Each `define_*()` registers its flags and validators on absl's global FLAGS,
or on the FlagValues it is given; an entry point converts the parsed values
once into a frozen `legacy_hvd.common.config.Config`. TRAINERS and
parse_trainer_flags let a launcher judge a trainer's flags before any rank
starts.
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
    "legacy_hvd.train_mwms_keras": (define_trainer_flags, mwms.define_mwms),
}


def parse_trainer_flags(module, argv):
  """`argv` parsed with `module`'s definitions and validators on a FlagValues
  of its own, as the trainer would; flags.Error (its str the one line) for what
  the trainer would refuse."""
  values = flags.FlagValues()
  for define in TRAINERS[module]:
    define(values)
  rest = values([module] + list(argv))
  if len(rest) > 1:
    raise flags.Error("unexpected argument {!r}; flags take the form "
                      "--name=value".format(rest[1]))
  return values
