"""absl flag definitions for legacy-hvd, one module per concern.

    from flags import define_trainer_flags
    define_trainer_flags()          # what both trainers (TF1, TF2) accept
    config = Config.from_flags(FLAGS)

Modules: training (schedule and optimizer), data (input), output (model_dir),
performance (Horovod and CPU knobs). Each `define_*()` registers its flags and
validators on absl's global FLAGS, or on the FlagValues it is given; an entry
point converts the parsed values once into a frozen `legacy_hvd.config.Config`.
"""
from absl import flags

from flags import data
from flags import output
from flags import performance
from flags import training


def define_trainer_flags(flag_values=flags.FLAGS):
  training.define_training(flag_values)
  data.define_data(flag_values)
  output.define_output(flag_values)
  performance.define_performance(flag_values)
