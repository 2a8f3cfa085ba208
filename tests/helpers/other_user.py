"""A user who is not root, running the jobs as cluster users do.

    user = other_user.make()       # root only; idempotent, per stack
    user.run(argv, env={...})      # argv as that user, in its environment
    user.python, user.horovodrun   # its interpreter and launcher
    user.fresh("run")              # a new directory it owns (model dirs, logs)
    user.data                      # the generated data, root's: read-only

What it runs is the suite's own stack, laid out as a cluster's shared
software tree is: a copy of this stack's interpreter (hard links: no space,
nothing it may write) in a directory every user can read, with this venv's
packages and the project on its path, and the environment a `module load`
gives (PATH, and LD_LIBRARY_PATH: the interpreter names its libpython by an
absolute run path, which the copy does not have). Here the venvs' Python
is pyenv's, under /root (mode 700): another user could not run it.

The user (USER_NAME) is a system user with no login shell; its home
(ROOT/home, HOME when it is unset) is a directory it owns. Each stack's
tree is made once per test run (under a lock: both of the suite's workers
may ask at once).
Python 3.7-compatible: the TF 1.15 suite makes its own.
"""
import collections
import contextlib
import fcntl
import hashlib
import os
import pathlib
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile

from tests import helpers
from legacy_hvd.data import embedded

USER_NAME = "lhvd-user"
ROOT = "/tmp/legacy-hvd-user"   # every part readable by every user
# The project's code the jobs import (the venv finds it in the checkout,
# which another user may not reach): copied beside the interpreter.
PROJECT = ("legacy_hvd", "flags")
_fresh = []   # the directories User.fresh made in this process


class User(collections.namedtuple(
    "User", "name uid gid home work data python horovodrun env")):
  """Runs commands as the user; what it can reach."""

  def run(self, argv, env=None, timeout=helpers.JOB_TIMEOUT, cwd=None):
    """argv to its end as the user, in its environment plus `env`."""
    return subprocess.run(argv, cwd=cwd or self.work,
                          env=dict(self.env, **(env or {})),
                          capture_output=True, universal_newlines=True,
                          timeout=timeout, preexec_fn=self._become)

  def run_module(self, module, args, env=None):
    """helpers.run_module as the user: `python -m module args`."""
    return self.run([self.python, "-m", module, *args], env=env)

  def horovodrun_job(self, np, module, args, env=None, **argv_options):
    """helpers.horovodrun as the user: its Python, and its own horovodrun
    with console_script=True."""
    return self.run(helpers.job_argv(np, module, args, python=self.python,
                                     **argv_options), env=env)

  def fresh(self, name):
    """A new directory of the user's under work/, for one job's files."""
    path = tempfile.mkdtemp(prefix=name + "-", dir=self.work)
    _fresh.append(path)
    os.chown(path, self.uid, self.gid)
    os.chmod(path, 0o755)
    return pathlib.Path(path)

  def _become(self):
    os.setgroups([])
    os.setgid(self.gid)
    os.setuid(self.uid)


def remove_fresh():
  """Removes the directories fresh() made in this process."""
  while _fresh:
    shutil.rmtree(_fresh.pop(), ignore_errors=True)


def make():
  """The user and this stack's tree for it (root only)."""
  if os.geteuid() != 0:
    raise RuntimeError("other_user.make() needs root: it adds a user")
  os.umask(0o022)   # what it copies, every user reads
  os.makedirs(ROOT, exist_ok=True)
  os.chmod(ROOT, 0o755)
  with _locked(ROOT + ".lock"):
    if subprocess.run(["id", "-u", USER_NAME], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode:
      subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir",
                      os.path.join(ROOT, "home"), "--shell",
                      "/usr/sbin/nologin", USER_NAME], check=True)
  account = pwd.getpwnam(USER_NAME)
  stack = os.path.join(ROOT, "stack-" + hashlib.sha1(
      sys.prefix.encode()).hexdigest()[:10])
  # This test run's (both xdist workers'): the checkout may have changed.
  run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or str(os.getpid())
  ready = os.path.join(stack, "ready")
  with _locked(ROOT + ".lock"):
    if not os.path.exists(ready) or open(ready).read() != run:
      shutil.rmtree(stack, ignore_errors=True)
      _lay_out(stack)
      with open(ready, "w") as f:
        f.write(run)
    home = _owned(account.pw_dir, account)   # its login's, as on a cluster
    work = _owned(os.path.join(stack, "work"), account)
  data = embedded.ensure_generated(os.path.join(stack, "data"))
  software = os.path.join(stack, "sw")
  env = {"PATH": "{}/bin:/usr/bin:/bin".format(software),
         "LD_LIBRARY_PATH": os.path.join(software, "lib"),
         "HOME": home, "LANG": "C.UTF-8", "USER": USER_NAME,
         "LOGNAME": USER_NAME}
  env.update((name, value) for name, value in os.environ.items()
             if name.startswith(("TF_CPP_", "LEGACY_HVD_")))
  env.pop("LEGACY_HVD_HOROVODRUN", None)   # the suite's launcher: root's
  return User(USER_NAME, account.pw_uid, account.pw_gid, home, work, data,
              os.path.join(software, "bin", "python"),
              os.path.join(software, "bin", "horovodrun"), env)


def _lay_out(stack):
  """The shared software tree: the interpreter's copy, its path to this
  venv's packages and the project, its python and horovodrun."""
  software = os.path.join(stack, "sw")
  os.makedirs(stack)
  _copy(sys.base_prefix, software)
  version = "python{}.{}".format(*sys.version_info[:2])
  site = sysconfig.get_paths(vars={"base": software,
                                   "platbase": software})["purelib"]
  # Only this venv's packages: not what was installed into the interpreter.
  shutil.rmtree(site)
  os.makedirs(site)
  packages = [path for path in sys.path
              if path.startswith(sys.prefix) and path.endswith(
                  "site-packages")]
  copies = []
  for i, path in enumerate(packages):
    copy = os.path.join(stack, "packages-{}".format(i))
    _copy(path, copy)
    copies.append(copy)
  project = os.path.join(stack, "project")
  os.makedirs(project)
  for name in PROJECT:
    shutil.copytree(os.path.join(helpers.REPO, name),
                    os.path.join(project, name),
                    ignore=shutil.ignore_patterns("__pycache__"))
  with open(os.path.join(site, "legacy-hvd-stack.pth"), "w") as f:
    f.write("\n".join([project] + copies) + "\n")
  bin_dir = os.path.join(software, "bin")
  with contextlib.suppress(FileExistsError):
    os.symlink(version, os.path.join(bin_dir, "python"))
  launcher = os.path.join(bin_dir, "horovodrun")
  with contextlib.suppress(FileNotFoundError):
    os.remove(launcher)   # the interpreter's own, if it had one
  with open(launcher, "w") as f:
    f.write("#!{}\nimport sys\nfrom horovod.runner.launch import "
            "run_commandline\nif __name__ == '__main__':\n"
            "  sys.exit(run_commandline())\n".format(
                os.path.join(bin_dir, version)))
  os.chmod(launcher, 0o755)


def _copy(source, target):
  """Hard links where one file system holds both (no space, at once), else
  a copy."""
  if subprocess.run(["cp", "-al", source, target],
                    stderr=subprocess.DEVNULL).returncode:
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run(["cp", "-a", source, target], check=True)


def _owned(path, account):
  os.makedirs(path, exist_ok=True)
  os.chown(path, account.pw_uid, account.pw_gid)
  os.chmod(path, 0o755)
  return path


@contextlib.contextmanager
def _locked(path):
  with open(path, "w") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    yield
