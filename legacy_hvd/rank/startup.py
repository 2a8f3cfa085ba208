"""What every entry point checks before and just after hvd.init(): bad flags,
paths and data end every rank at once, in one line, before any collective."""
import os
import tempfile

from legacy_hvd.common import cli
from legacy_hvd.common import paths
from legacy_hvd.data import cifar10
from legacy_hvd.rank import config_checks
from legacy_hvd.rank import placement


def check_model_dir(path):
  """Fails with one line if `path` cannot be a directory (read-only check)."""
  problem = paths.directory_problem("model_dir", path)
  if problem:
    cli.fail(problem)


def prepare_model_dir(path):
  """Rank 0: creates `path` and proves it writable; cli.UserError if not."""
  try:
    os.makedirs(path, exist_ok=True)
    with tempfile.TemporaryFile(dir=path):
      pass
  except OSError as e:
    raise cli.UserError(f"--model_dir={path}: not writable ({e.strerror}); "
                        "expected a directory this user can write") from None


def before_horovod(config):
  """What every rank checks and sets before hvd.init(); (the data, this
  process's threads). The threads are taken last: the ones to pin, without
  Horovod's and Gloo's, which hvd.init() starts."""
  check_model_dir(config.model_dir)
  problem = config.step_log and config_checks.file_problem("step_log",
                                                          config.step_log)
  if problem:
    cli.fail(problem)
  processes = cli.launched_processes()
  if not config.horovod and processes > 1:
    cli.fail(f"--nohorovod: started as one of {processes} "
             "processes; expected one process, started with python, not "
             "horovodrun or mpirun")
  try:
    data = cifar10.load(config.data_dir)
  except cifar10.DataError as e:
    cli.fail(str(e))
  impossible = config_checks.problem(config, len(data.train_labels), processes)
  if impossible:
    cli.fail(impossible)
  if config.deterministic:
    placement.make_deterministic()
  return data, placement.threads()
