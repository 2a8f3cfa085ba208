"""Other stacks' Pythons, for the tools that run a job on several stacks.

    stacks.problem(python)              # None, or why it cannot run the job
    stacks.tensorflow_version(python)   # "1.15.5"
    stacks.horovodrun(python)           # ["/venv/bin/horovodrun"], beside it

A stack is a venv made by the Makefile (`.venv`, `.venv-tf1.15.5`, ...):
its Python, TensorFlow, Horovod built against that TensorFlow, and this
project installed in editable mode. A job on a stack must be launched by the
stack's own horovodrun, whose ranks then run the stack's Python.
"""
import os
import subprocess

PROBE_TIMEOUT_SECONDS = 120
_VERSIONS = {}


def horovodrun(python):
  """horovodrun's command: the one installed with `python`, else the one on
  PATH. LEGACY_HVD_HOROVODRUN names a script that `python` runs in its place
  (the test suite's tests/helpers/launcher.py: horovodrun without its
  per-launch build probe)."""
  script = os.environ.get("LEGACY_HVD_HOROVODRUN")
  if script:
    return [python, script]
  beside = os.path.join(os.path.dirname(python), "horovodrun")
  return [beside if os.path.exists(beside) else "horovodrun"]


def tensorflow_version(python):
  """The TensorFlow version `python` imports, e.g. '1.15.5'."""
  if python not in _VERSIONS:
    _VERSIONS[python] = subprocess.run(
        [python, "-c", "import tensorflow as tf; print(tf.version.VERSION)"],
        capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS,
        check=True).stdout.strip().splitlines()[-1]
  return _VERSIONS[python]


def problem(python):
  """None if `python` can run the job (TF, Horovod, this project), else why."""
  if not os.path.isfile(python) or not os.access(python, os.X_OK):
    return f"{python}: no such Python; expected a venv's bin/python"
  probe = subprocess.run(
      [python, "-c", "import tensorflow, horovod.tensorflow, legacy_hvd"],
      capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS)
  if probe.returncode:
    last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
    return (f"{python}: cannot import TensorFlow, Horovod and legacy_hvd "
            f"({last}); expected a venv made by `make install`")
  return None
