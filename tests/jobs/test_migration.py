"""Every trainer resumes a model directory another trainer wrote.

legacy_hvd/checkpoints/migration.py converts the newest checkpoint on resume. Each test
continues a copy of a session run (tf1_run, tf2_run: np=2, 40 steps,
checkpoints at 20 and 40) on another path and checks what the conversion
carried over, value for value, and where it must, bit for bit the weights
of the run that never moved. What cannot be converted is refused in one
line, with the model directory unchanged.
"""
import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from legacy_hvd.checkpoints import migration
from legacy_hvd.checkpoints import resume
from legacy_hvd.model import cnn
from legacy_hvd.model import schedule
from legacy_hvd.training import job_faults
from tests.helpers import REPO, assert_ok, error_lines, horovodrun
from tests.helpers import read_results
from tests.helpers.shared_runs import copy_run

MOVE_STEP, LAST_STEP = 20, 40   # tf1_run's and tf2_run's checkpoints


def continue_run(run, target, module, max_steps, start=None, args=()):
  """horovodrun -np 2 of `module` on a copy of `run`'s model directory,
  from its checkpoint at `start` (default its newest) to `max_steps`."""
  model_dir = copy_run(run, target)
  if start is not None:
    prefix = tf.train.latest_checkpoint(str(model_dir))
    tf.train.update_checkpoint_state(
        str(model_dir), prefix.replace(f"-{LAST_STEP}", f"-{start}"))
  process = horovodrun(2, module, [
      f"--model_dir={model_dir}", f"--data_dir={run.data_dir}",
      f"--max_steps={max_steps}", "--log_every_n_steps=10", *args])
  assert_ok(process)
  return model_dir, process.stdout + process.stderr


def tensors(path):
  reader = tf.train.load_checkpoint(str(path))
  return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
          if k != "_CHECKPOINTABLE_OBJECT_GRAPH"}


def checkpoint(model_dir, step):
  return tensors(os.path.join(str(model_dir), step))


def test_tf1_job_continues_on_the_tf2_loop_bit_for_bit(tf1_run, tmp_path):
  model_dir, output = continue_run(tf1_run, tmp_path / "m",
                                   "legacy_hvd.train_tf2", LAST_STEP,
                                   start=MOVE_STEP)
  assert (f"Converted model.ckpt-{MOVE_STEP} (tf1 checkpoint, adam, step "
          f"{MOVE_STEP}) to ckpt-{MOVE_STEP} (v1)") in output
  before = checkpoint(tf1_run.model_dir, f"model.ckpt-{MOVE_STEP}")
  after = checkpoint(model_dir, f"ckpt-{MOVE_STEP}")
  for name in cnn.PARAM_SHAPES:
    key = resume.tf2_attribute(name)
    slot = f"{key}/.OPTIMIZER_SLOT/optimizer/%s/.ATTRIBUTES/VARIABLE_VALUE"
    np.testing.assert_array_equal(after[resume.tf2_key(name)],
                                  before[name])
    np.testing.assert_array_equal(after[slot % "m"], before[name + "/Adam"])
    np.testing.assert_array_equal(after[slot % "v"], before[name + "/Adam_1"])
  assert after["step/.ATTRIBUTES/VARIABLE_VALUE"] == MOVE_STEP
  assert (after["optimizer/beta1_power/.ATTRIBUTES/VARIABLE_VALUE"]
          == before["beta1_power"])
  # The moved run's weights at step 40 are the unmoved run's, bit for bit.
  unmoved = checkpoint(tf1_run.model_dir, f"model.ckpt-{LAST_STEP}")
  moved = checkpoint(model_dir, f"ckpt-{LAST_STEP}")
  for name in cnn.PARAM_SHAPES:
    np.testing.assert_array_equal(moved[resume.tf2_key(name)],
                                  unmoved[name])
  assert read_results(model_dir)["weights_in_sync"]


# The same mapping (legacy_hvd.checkpoints.migration) as the move above, which on the
# TF 1.15 stack reads and writes both kinds there.
@pytest.mark.one_stack
def test_tf2_loop_continues_on_the_tf1_job_bit_for_bit(tf2_run, tmp_path):
  model_dir, output = continue_run(tf2_run, tmp_path / "m", "legacy_hvd.train",
                                   LAST_STEP, start=MOVE_STEP)
  assert (f"Converted ckpt-{MOVE_STEP} (v1 checkpoint, adam, step "
          f"{MOVE_STEP}) to model.ckpt-{MOVE_STEP} (tf1)") in output
  unmoved = checkpoint(tf2_run.model_dir, f"ckpt-{LAST_STEP}")
  moved = checkpoint(model_dir, f"model.ckpt-{LAST_STEP}")
  for name in cnn.PARAM_SHAPES:
    np.testing.assert_array_equal(moved[name],
                                  unmoved[resume.tf2_key(name)])
  assert moved["global_step"] == LAST_STEP


@pytest.mark.one_stack   # the mapping: see the test above
def test_tf1_job_continues_on_keras_fit(tf1_run, tmp_path):
  model_dir, output = continue_run(tf1_run, tmp_path / "m",
                                   "legacy_hvd.train_keras", LAST_STEP + 4)
  assert (f"Converted model.ckpt-{LAST_STEP} (tf1 checkpoint, adam, step "
          f"{LAST_STEP}) to ckpt-{LAST_STEP} (keras-v2): weights, optimizer "
          "state, step; not exact: Adam's beta^t") in output
  before = checkpoint(tf1_run.model_dir, f"model.ckpt-{LAST_STEP}")
  after = checkpoint(model_dir, f"ckpt-{LAST_STEP}")
  for name in cnn.PARAM_SHAPES:
    slot = (f"{resume.tf2_attribute(name)}/.OPTIMIZER_SLOT/optimizer/m/"
            ".ATTRIBUTES/VARIABLE_VALUE")
    np.testing.assert_array_equal(after[slot], before[name + "/Adam"])
  assert after["step/.ATTRIBUTES/VARIABLE_VALUE"] == LAST_STEP
  results = read_results(model_dir)
  assert results["steps"] == LAST_STEP + 4 and results["weights_in_sync"]


# The TF2 loop's --optimizer_impl=keras objects (the new Keras optimizer on
# TF >= 2.11, OptimizerV2 on TF 1.15), converted into and back out of.
KERAS_ROUND_TRIP = """
import sys
from legacy_hvd.common import compat
compat.enable_v2_behavior()
import tensorflow.compat.v2 as tf
from legacy_hvd.checkpoints import migration
from legacy_hvd.checkpoints import resume
from legacy_hvd.model import cnn
from legacy_hvd.model import optimizers
from legacy_hvd.model import schedule
from legacy_hvd.rank import devices
# One plain process, never placed as a rank: TF's default threads.
devices.session_config = tf.compat.v1.ConfigProto
model_dir = sys.argv[1]
params = {n: tf.Variable(tf.zeros(s), name=n)
          for n, s in cnn.PARAM_SHAPES.items()}
step = tf.Variable(0, dtype=tf.int64)
optimizer = optimizers.keras("adam", 0.001)
checkpoint = tf.train.Checkpoint(step=step, optimizer=optimizer, **{
    resume.tf2_attribute(n): v for n, v in params.items()})
rate = schedule.Schedule(0.001, 1.0, 0)
assert migration.to_tf2(model_dir, checkpoint, step, optimizer, params, rate)
print(migration.read(migration.newest(model_dir)).flavour)
assert migration.to_tf1(model_dir, "adam", rate)
"""


def test_keras_optimizer_state_converts_in_and_out(tf1_run, tmp_path):
  model_dir = copy_run(tf1_run, tmp_path / "m")
  process = subprocess.run([sys.executable, "-c", KERAS_ROUND_TRIP,
                            str(model_dir)], cwd=REPO, capture_output=True,
                           text=True, timeout=120)
  assert process.returncode == 0, process.stderr
  assert process.stdout.split() == ["keras-v2" if tf.__version__ < "2.11"
                                    else "keras"]
  before = migration.read(str(tf1_run.model_dir / f"model.ckpt-{LAST_STEP}"))
  after = migration.read(migration.newest(str(model_dir)))
  assert after.flavour == "tf1" and after.step == LAST_STEP
  for slot in ("m", "v"):
    for name in cnn.PARAM_SHAPES:
      np.testing.assert_array_equal(after.slots[slot][name],
                                    before.slots[slot][name])
  # Keras keeps no beta^t: coming back, it is pow(beta, t), within float32
  # rounding of the running product.
  np.testing.assert_allclose(after.beta_powers, before.beta_powers, rtol=1e-5)


def digest(model_dir):
  """A hash of every file's name and bytes under model_dir."""
  sha = hashlib.sha256()
  for root, _, files in sorted(os.walk(model_dir)):
    for name in sorted(files):
      path = os.path.join(root, name)
      sha.update(os.path.relpath(path, model_dir).encode())
      with open(path, "rb") as f:
        sha.update(f.read())
  return sha.hexdigest()


def damage(model_dir, how):
  data = tf.train.latest_checkpoint(str(model_dir)) + ".data-00000-of-00001"
  if how == "half-written":
    os.remove(data)
  else:
    with open(data, "r+b") as f:
      f.seek(1000)
      f.write(b"\xff" * 64)


@pytest.fixture(scope="module")
def other_model(tmp_path_factory):
  """A name-based checkpoint of a wider conv layer (64 filters)."""
  model_dir = str(tmp_path_factory.mktemp("other-model"))
  shapes = dict(cnn.PARAM_SHAPES, **{"conv1/weights": (3, 3, 3, 64)})
  with tf.Graph().as_default(), tf.Session() as session:
    variables = {name: tf.Variable(tf.zeros(shape), name=name.replace("/", "_"))
                 for name, shape in shapes.items()}
    variables["global_step"] = tf.Variable(5, dtype=tf.int64)
    session.run(tf.global_variables_initializer())
    tf.train.Saver(variables).save(session, os.path.join(model_dir,
                                                         "model.ckpt"), 5)
  return model_dir


def test_what_cannot_be_converted_is_refused_and_nothing_written(
    tf1_run, tf2_run, other_model, tmp_path):
  """Each case as the TF2 trainers' and the TF1 job's rank 0 checks it
  (in this process: the checks refuse before any rank trains); then one
  whole job, for the line and the exit code."""
  cases = {"other model": (other_model, "adam")}
  for name, run, optimizer in (("tf1", tf1_run, "momentum"),
                               ("tf2", tf2_run, "sgd")):
    cases[f"{name} adam, --optimizer={optimizer}"] = (
        copy_run(run, tmp_path / f"{name}-opt"), optimizer)
    for how in ("damaged", "half-written"):
      cases[f"{name} {how}"] = (copy_run(run, tmp_path / f"{name}-{how}"),
                                "adam")
      damage(cases[f"{name} {how}"][0], how)
  expected = {"other model": "a checkpoint of a different model",
              "adam, --optimizer": "was trained with --optimizer=adam",
              "damaged": "damaged or half-written checkpoint",
              "half-written": "damaged or half-written checkpoint"}
  for case, (model_dir, optimizer) in cases.items():
    model_dir = str(model_dir)
    # Each trainer refuses the other format's checkpoint; its own format's
    # damage is prepare_resume's (it falls back to the one before).
    targets = [("tf1", cnn.PARAM_SHAPES,
                lambda: migration.to_tf1(model_dir, optimizer,
                                         schedule.Schedule(0.001, 1.0, 0))),
               ("tf2", job_faults.tf2_checkpoint_shapes(),
                lambda: migration.check(model_dir, optimizer, migration.TF2))]
    for target, shapes, migrate in targets:
      if case.startswith(target) and case.endswith(("damaged", "written")):
        continue
      before = digest(model_dir)
      refused = job_faults.model_dir_problem(0, model_dir, shapes, migrate)
      want = next(v for k, v in expected.items() if k in case)
      assert refused and want in refused, (case, target, refused)
      assert "\n" not in refused
      assert digest(model_dir) == before, (case, target)
  model_dir = str(cases["tf1 adam, --optimizer=momentum"][0])
  before = digest(model_dir)
  process = horovodrun(1, "legacy_hvd.train_keras", [
      f"--model_dir={model_dir}", f"--data_dir={tf1_run.data_dir}",
      "--optimizer=momentum", "--max_steps=50"])
  assert process.returncode != 0
  assert [line.split(": error: ")[1] for line in error_lines(process)] == [
      f"--optimizer=momentum: model.ckpt-{LAST_STEP} in --model_dir="
      f"{model_dir} was trained with --optimizer=adam; expected that flag, "
      "or a new --model_dir"]
  assert "]<stderr>:Traceback" not in process.stdout + process.stderr
  assert digest(model_dir) == before
