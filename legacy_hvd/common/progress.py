"""Training progress shared by the TF1 hook and the TF2 loop, and StepLog: one
JSON line per step, for tools/compare_paths.py."""
import json
import os
import time

from absl import logging


class Progress:

  def __init__(self, every_n_steps, global_batch, log=True,
               steps_per_epoch=None, last_step=None):
    self._every_n = every_n_steps
    self._global_batch = global_batch
    self._log = log
    # Cluster jobs are long: the line also says the epoch and, from the
    # last window's pace, when the run will reach last_step.
    self._steps_per_epoch = steps_per_epoch
    self._last_step = last_step
    self.start_step = None
    self.last_step = None
    self.last_values = {}
    self._steps = 0
    self._first_time = self._last_time = None

  def start(self, step):
    self.start_step = self.last_step = step
    self._window = (step, time.perf_counter())
    if self._log and step:
      logging.info("Resuming from global step %d", step)

  def record(self, step, values):
    """Notes a finished step; logs and returns images/sec every n steps."""
    now = time.perf_counter()
    self.last_step, self.last_values = step, values
    self._steps += 1
    self._last_time = now
    if self._first_time is None:
      # The first step builds kernels and fills buffers: timing starts after.
      self._first_time = now
    if step % self._every_n:
      return None
    window_step, window_time = self._window
    rate = (step - window_step) * self._global_batch / (now - window_time)
    self._window = (step, now)
    if self._log:
      epoch = (f"epoch {step / self._steps_per_epoch:.2f}, "
               if self._steps_per_epoch else "")
      eta = ""
      if self._last_step and step > window_step:
        seconds = (self._last_step - step) * (now - window_time) / (
            step - window_step)
        eta = f", ETA {_duration(seconds)}"
      logging.info("step %d: %s%s, %.0f images/sec%s", step, epoch, ", ".join(
          f"{name} {float(value):.4g}" for name, value in values.items()),
                   rate, eta)
    return rate

  def images_per_sec(self):
    """Mean global images/sec after the first step; None if too few steps."""
    if self._steps < 2:
      return None
    return ((self._steps - 1) * self._global_batch
            / (self._last_time - self._first_time))


def _duration(seconds):
  """3725.2 -> '1h02m05s', 65 -> '1m05s', 7.4 -> '7s'."""
  seconds = max(0, int(round(seconds)))
  hours, rest = divmod(seconds, 3600)
  minutes, seconds = divmod(rest, 60)
  if hours:
    return f"{hours}h{minutes:02d}m{seconds:02d}s"
  if minutes:
    return f"{minutes}m{seconds:02d}s"
  return f"{seconds}s"


class StepLog:
  """Appends a JSON line per step ("step", "time", "loss", "learning_rate"[,
  "weight_digest"]) and per held-out evaluation (with "test_loss"); "time" is
  rank 0's wall clock, which tools/benchmark.py times steps with."""

  def __init__(self, path):
    if path:
      os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    self._path = path
    self._file = open(path, "a", buffering=1) if path else None

  def write(self, step, loss, learning_rate, digest=None):
    if self._file is None:
      return
    record = {"step": int(step), "time": time.time(), "loss": float(loss),
              "learning_rate": float(learning_rate)}
    if digest is not None:
      record["weight_digest"] = [float(d) for d in digest]
    self._append(record)

  def write_evaluation(self, step, loss, accuracy, examples):
    """One held-out evaluation, also after close() (the last one)."""
    if self._file is None:
      return
    self._append({"step": int(step), "time": time.time(),
                  "test_loss": float(loss), "test_accuracy": float(accuracy),
                  "test_examples": int(examples)})

  def _append(self, record):
    line = json.dumps(record) + "\n"
    try:
      if self._file.closed:
        with open(self._path, "a") as f:
          f.write(line)
      else:
        self._file.write(line)
    except OSError as e:   # a write's error names no file: name this one
      e.filename = e.filename or self._path
      raise

  def close(self):
    if self._file is not None:
      self._file.close()
