"""Flag definitions: defaults and validators, parsed in this process (the
one-line errors at the command line: tests/jobs/test_flags.py)."""
from absl import flags
import pytest

from flags import define_trainer_flags
from flags.estimator import define_estimator
from legacy_hvd.common.config import Config


def parse(*args):
  flag_values = flags.FlagValues()
  define_trainer_flags(flag_values)
  flag_values(["prog", *args])
  return flag_values


def test_defaults_make_the_default_config():
  assert Config.from_flags(parse()) == Config()


def test_values_reach_the_config():
  config = Config.from_flags(parse("--batch_size=32", "--lr_scaling=sqrt",
                                   "--optimizer=momentum", "--max_steps=7",
                                   "--eval_every_n_steps=5"))
  assert (config.batch_size, config.lr_scaling, config.optimizer,
          config.max_steps, config.eval_every_n_steps) == (
              32, "sqrt", "momentum", 7, 5)


@pytest.mark.parametrize("arg, named", [
    ("--batch_size=0", "--batch_size"),
    ("--lr=-1", "--lr"),
    ("--lr=0", "--lr"),
    ("--lr_scaling=cubic", "--lr_scaling"),
    ("--optimizer=rmsprop", "--optimizer"),
    ("--epochs=0", "--epochs"),
    ("--max_steps=-3", "--max_steps"),
    ("--warmup_epochs=-1", "--warmup_epochs"),
    ("--backward_passes_per_step=0", "--backward_passes_per_step"),
    ("--intra_op_threads=-2", "--intra_op_threads"),
    ("--model_dir=", "--model_dir"),
    ("--eval_every_n_steps=-1", "--eval_every_n_steps"),
])
def test_bad_values_are_rejected_naming_the_flag(arg, named):
  with pytest.raises(flags.IllegalFlagValueError, match=named):
    parse(arg)


def test_warmup_longer_than_training_is_rejected():
  with pytest.raises(flags.IllegalFlagValueError, match="--warmup_epochs"):
    parse("--epochs=2", "--warmup_epochs=3")
  # With --max_steps it is decided with the data, before hvd.init()
  # (tests/unit/test_feasibility.py).
  parse("--warmup_epochs=3", "--max_steps=100")


def test_epochs_and_max_steps_together_are_rejected():
  with pytest.raises(flags.IllegalFlagValueError, match="--max_steps"):
    parse("--epochs=2", "--max_steps=100")
  parse("--epochs=10")   # the default's value, given: fine alone


def parse_estimator(*args):
  flag_values = flags.FlagValues()
  define_trainer_flags(flag_values)
  define_estimator(flag_values)
  flag_values(["prog", *args])
  return flag_values


def test_estimator_flags_reach_the_config_and_refuse_what_it_cannot_run():
  assert Config.from_flags(parse_estimator(
      "--eval_every_n_steps=100")).eval_every_n_steps == 100
  assert Config.from_flags(parse_estimator()) == Config()
  with pytest.raises(flags.IllegalFlagValueError, match="legacy_hvd.train only"):
    parse_estimator("--nohorovod")
