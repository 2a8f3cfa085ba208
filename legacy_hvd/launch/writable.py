"""What a job writes before its first step, checked by its launcher before
any rank starts: rank 0's model directory (and the claim of another job
on this host, common/model_dir_claim.py), TMPDIR when it is set (Python's and
TensorFlow's scratch files) and, under horovodrun, HOME (its cache,
~/.horovod). Nothing is created. Python 3.7-compatible."""
import os
import pwd

from legacy_hvd.common import cli
from legacy_hvd.common import model_dir_claim
from legacy_hvd.common import paths


def model_dir_problem(path, env=None):
  """Why rank 0 could not create and write `path` here, or the job on this
  host that holds it (env: the launcher's, its run marked), or None."""
  problem = paths.directory_problem("model_dir", path)
  if problem:
    return problem
  parent = paths.existing_ancestor(path)
  if not _writable(parent):
    return ("--model_dir={}: {} is not writable for this user; expected a "
            "directory it can write".format(path, parent))
  return model_dir_claim.in_use(path, env)


def problems(model_dir=None, horovodrun=False, env=None):
  """One line per place this host's part of the job could not write, each
  saying what to do; [] when all can be written."""
  env = os.environ if env is None else env
  found = []
  if model_dir:
    found.append(model_dir_problem(model_dir, env))
  tmpdir = env.get("TMPDIR")
  if tmpdir and not (os.path.isdir(tmpdir) and _writable(tmpdir)):
    found.append("TMPDIR={}: not a directory this user can write; expected "
                 "one it can (or TMPDIR unset: /tmp)".format(tmpdir))
  if horovodrun:
    home = env.get("HOME") or pwd.getpwuid(os.getuid()).pw_dir
    cache = os.path.join(home, ".horovod")
    if not (_writable(cache) if os.path.isdir(cache) else
            os.path.isdir(home) and _writable(home)):
      found.append("HOME={}: horovodrun writes its cache in {}, which this "
                   "user cannot; expected a writable HOME (e.g. HOME=$TMPDIR "
                   "for the job)".format(home, cache))
  return [line for line in found if line]


def require(model_dir=None, horovodrun=False, env=None,
            nothing="nothing was started"):
  """problems(), as a launcher ends on them: one line, exit 1."""
  found = problems(model_dir, horovodrun, env)
  if found:
    cli.fail("; ".join(found) + "; " + nothing)


def _writable(directory):
  return os.access(directory, os.W_OK | os.X_OK)
