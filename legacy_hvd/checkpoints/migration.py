"""Resuming a model directory that another trainer wrote: the one mapping.

The flavours hold the same state under different keys and conventions:

  tf1       legacy_hvd.train(_estimator): name-based tf.compat.v1.train
            slots (conv1/weights/Adam, .../Momentum), beta1_power
  v1        train_tf2 --optimizer_impl=v1: object-based, the same optimizer
  keras-v2  train_keras; train_tf2 --optimizer_impl=keras on TF 1.15
  keras     train_tf2 --optimizer_impl=keras on TF >= 2.11: the new Keras
            optimizer (optimizer/_variables/N; see _keras_slot_name)

Weights, Adam's m and v and the step (and with it the learning rate and the
data position) carry over exactly. Two things cannot:
  - Adam's beta^t: v1 keeps running float32 products, Keras computes pow(beta,
    t) from its step; the first updates after the move differ in the last bits.
  - Momentum: Keras folds the rate into its velocity (-rate x v1's
    accumulator): exact only if the rate was constant (not in warm-up).
Converted on resume, so a refusal comes before anything is written; the old
checkpoints stay, for the way back. `lr_schedule`: the run's model.schedule.Schedule."""
import dataclasses
import os
import re

from absl import logging
import numpy as np
import tensorflow.compat.v1 as tf

from legacy_hvd.checkpoints import resume
from legacy_hvd.common import cli
from legacy_hvd.model import cnn
from legacy_hvd.model import keras_compat
from legacy_hvd.rank import devices

TF1, TF2 = "tf1", "tf2"   # the two checkpoint formats a trainer writes
KERAS = ("keras-v2", "keras")
SLOTS = {"adam": ("m", "v"), "momentum": ("momentum",), "sgd": ()}
_TF1_SLOT = {"m": "Adam", "v": "Adam_1", "momentum": "Momentum"}
_OBJECT_GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"
_STEP_KEY = "step/.ATTRIBUTES/VARIABLE_VALUE"
# Adam's decay rates: both implementations' defaults, which optimizers.py keeps.
ADAM_BETA1 = 0.9
ADAM_BETA2 = 0.999


@dataclasses.dataclass
class State:
  """A checkpoint's training state, by cnn.PARAM_SHAPES names."""
  path: str
  flavour: str            # tf1, v1, keras-v2, keras
  optimizer: str          # adam, momentum, sgd (--optimizer's names)
  step: int
  weights: dict           # name -> float32 array
  slots: dict             # "m"/"v"/"momentum" -> {name: array}, as stored
  beta_powers: tuple      # v1's (beta1^(step+1), beta2^(step+1)), or None


def newest(model_dir):
  """The newest checkpoint named in model_dir's state file, or None."""
  listed = resume.listing(model_dir).paths
  return listed[-1] if listed else None


def read(path, complete=True):
  """The State of checkpoint `path`, or cli.UserError if it is not this
  model's. complete False: only names and shapes (no values, no CRC check)."""
  where = os.path.basename(path)
  try:
    reader = tf.train.load_checkpoint(path)
    shapes = reader.get_variable_to_shape_map()
    keys = _keys(reader, shapes)
    for name, shape in cnn.PARAM_SHAPES.items():
      key = keys.weights.get(name)
      if key is None or tuple(shapes[key]) != tuple(shape):
        found = (f"has {name} {list(shapes[key])}" if key
                 else f"lacks {name}")
        raise cli.UserError(
            f"{where} is a checkpoint of a different model ({found}, "
            f"expected {list(shape)}); use a new --model_dir")
    optimizer = next((name for name, needs in SLOTS.items()
                      if needs and set(needs) <= set(keys.slots)), "sgd")
    values = {key: reader.get_tensor(key) for key in shapes} if complete else {}
  except resume.READ_ERRORS as e:
    raise cli.UserError(
        f"{path}: damaged or half-written checkpoint "
        f"({resume.first_line(e)}); expected one that reads completely "
        "(move it away to resume from the one before)") from None
  if not complete:
    return State(path, keys.flavour, optimizer, None, {}, {}, None)
  return State(
      path, keys.flavour, optimizer, int(values[keys.step]),
      {name: values[key] for name, key in keys.weights.items()},
      {slot: {name: values[key] for name, key in by_name.items()}
       for slot, by_name in keys.slots.items()},
      tuple(float(values[k]) for k in keys.beta_powers)
      if keys.beta_powers else None)


@dataclasses.dataclass
class _Keys:
  flavour: str
  step: str
  weights: dict
  slots: dict
  beta_powers: tuple


def _keys(reader, shapes):
  """Where each part of the state is in this checkpoint's flavour."""
  names = cnn.PARAM_SHAPES
  if _OBJECT_GRAPH not in shapes:   # name-based: the TF1 jobs
    slots = {slot: {n: f"{n}/{suffix}" for n in names
                    if f"{n}/{suffix}" in shapes}
             for slot, suffix in _TF1_SLOT.items()}
    return _Keys(TF1, "global_step", {n: n for n in names if n in shapes},
                 {s: by_name for s, by_name in slots.items() if by_name},
                 _present(shapes, "beta1_power", "beta2_power"))
  weights = {n: resume.tf2_key(n) for n in names
             if resume.tf2_key(n) in shapes}
  if any(k.startswith("optimizer/_variables/") for k in shapes):
    # The new Keras optimizer numbers its slots; the object graph names
    # them. SGD's momentum is its only slot, "m" too.
    slots = {}
    for full_name, key in _object_graph_names(reader):
      if key.startswith("optimizer/_variables/"):
        slot, name = _keras_slot_name(full_name)
        if name in names:
          slots.setdefault(slot, {})[name] = key
    if set(slots) == {"m"}:
      slots = {"momentum": slots["m"]}
    return _Keys("keras", _STEP_KEY, weights, slots, None)
  slots = {}
  for n in names:
    for slot in ("m", "v", "momentum"):
      key = (f"{resume.tf2_attribute(n)}/.OPTIMIZER_SLOT/optimizer/"
             f"{slot}/.ATTRIBUTES/VARIABLE_VALUE")
      if key in shapes:
        slots.setdefault(slot, {})[n] = key
  keras_v2 = "optimizer/decay/.ATTRIBUTES/VARIABLE_VALUE" in shapes
  betas = None if keras_v2 else _present(
      shapes, "optimizer/beta1_power/.ATTRIBUTES/VARIABLE_VALUE",
      "optimizer/beta2_power/.ATTRIBUTES/VARIABLE_VALUE")
  return _Keys("keras-v2" if keras_v2 else "v1", _STEP_KEY, weights, slots,
               betas)


def _keras_slot_name(full_name):
  """(slot, parameter) of a new Keras optimizer's slot by its object-graph
  name: [Adam/]m/conv1/weights on Keras 2.11-2.15 and tf_keras,
  adam/conv1_weights_0_momentum on Keras 3 (m, v: momentum, velocity)."""
  parts = full_name.split("/")
  for slot, suffix in (("m", "_momentum"), ("v", "_velocity")):
    if parts[-1].endswith(suffix):
      flat = re.sub(r"_\d+$", "", parts[-1][:-len(suffix)])
      return slot, next((n for n in cnn.PARAM_SHAPES
                         if n.replace("/", "_") == flat), None)
  if len(parts) >= 3:
    return parts[-3], "/".join(parts[-2:])
  return None, None


def _present(shapes, *keys):
  return keys if all(k in shapes for k in keys) else None


def _object_graph_names(reader):
  """(full name, checkpoint key) of every value in a TF2 checkpoint."""
  from tensorflow.core.protobuf import trackable_object_graph_pb2  # pylint: disable=import-outside-toplevel
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor(_OBJECT_GRAPH))
  return [(a.full_name, a.checkpoint_key)
          for node in graph.nodes for a in node.attributes]


def check(model_dir, optimizer, target_format):
  """Rank 0, before training: cli.UserError unless the newest checkpoint can
  resume a `target_format` trainer with `optimizer`; its State if it is the
  other format's, else False."""
  path = newest(model_dir)
  if path is None:
    return False
  on_disk = _format_on_disk(path)
  if on_disk is None:
    # Unreadable: the trainer's own format falls back to the checkpoint
    # before (resume.prepare_resume); another format's is refused.
    if _format_of_others(model_dir, path) in (None, target_format):
      return False
    read(path)   # raises: damaged or half-written
  foreign = on_disk != target_format
  try:
    state = read(path, complete=foreign)
  except cli.UserError:
    if foreign:
      raise
    return False   # its own format: prepare_resume falls back or says so
  if state.optimizer != optimizer:
    raise cli.UserError(
        f"--optimizer={optimizer}: {os.path.basename(path)} in "
        f"--model_dir={model_dir} was trained with --optimizer="
        f"{state.optimizer}; expected that flag, or a new --model_dir")
  return state if foreign else False


def _format_on_disk(path):
  try:
    shapes = tf.train.load_checkpoint(path).get_variable_to_shape_map()
  except resume.READ_ERRORS:
    return None
  return TF2 if _OBJECT_GRAPH in shapes else TF1


def _format_of_others(model_dir, path):
  """The format of the newest readable checkpoint before `path`, or None."""
  found = resume.listing(model_dir)
  others = [p for p in found.older + found.paths if p != path]
  formats = [f for f in map(_format_on_disk, reversed(others)) if f]
  return formats[0] if formats else None


def to_tf1(model_dir, optimizer, lr_schedule):
  """Rank 0 of a TF1 job, before its session: check(); a TF2 checkpoint
  becomes model.ckpt-<step> (name-based), the newest. True if converted."""
  state = check(model_dir, optimizer, TF1)
  if not state:
    return False
  values = {name: state.weights[name] for name in cnn.PARAM_SHAPES}
  with tf.Graph().as_default(), tf.Session(
      config=devices.session_config()) as session:
    rate = session.run(lr_schedule.rate(tf.constant(state.step, tf.int64)))
    for slot, by_name in _slots_as(state, TF1, rate).items():
      values.update({f"{n}/{_TF1_SLOT[slot]}": v for n, v in by_name.items()})
    betas = _beta_powers(state)
    if betas:
      values.update(beta1_power=betas[0], beta2_power=betas[1])
    variables = {key: tf.Variable(value, name=key.replace("/", "_"))
                 for key, value in values.items()}
    variables["global_step"] = tf.Variable(state.step, dtype=tf.int64)
    session.run(tf.global_variables_initializer())
    prefix = tf.train.Saver(variables).save(
        session, os.path.join(model_dir, "model.ckpt"),
        global_step=state.step, write_meta_graph=False, write_state=False)
  _make_newest(model_dir, prefix)
  _log(state, "tf1", prefix)
  return True


def to_tf2(model_dir, checkpoint, step, optimizer, params, lr_schedule):
  """Rank 0 of a TF2 trainer, before restoring: an other flavour's newest
  checkpoint written as ckpt-<step> of `checkpoint`. True if converted."""
  path = newest(model_dir)
  if path is None or _format_on_disk(path) is None:
    return False
  target = flavour_of(optimizer)
  state = read(path)
  if state.flavour == target:
    return False
  variables = list(params.values())
  step.assign(state.step)
  rate = float(lr_schedule.rate(tf.constant(state.step, tf.int64)))
  slots = _slots_as(state, target, rate)
  for name, variable in params.items():
    variable.assign(state.weights[name])
  for slot, by_name in slots.items():
    for name, value in by_name.items():
      _slot_of(optimizer, target, params[name], slot, variables).assign(value)
  if target == "v1" and state.optimizer == "adam":
    for accumulator, value in zip(optimizer._get_beta_accumulators(),  # pylint: disable=protected-access
                                  _beta_powers(state)):
      accumulator.assign(value)
  if target in KERAS:
    optimizer.iterations.assign(state.step)
  prefix = checkpoint.write(os.path.join(model_dir, f"ckpt-{state.step}"))
  _make_newest(model_dir, prefix)
  _log(state, target, prefix)
  return True


def flavour_of(optimizer):
  """The flavour a live TF2 optimizer writes."""
  if isinstance(optimizer, tf.train.Optimizer):
    return "v1"
  # The new Keras optimizer (TF >= 2.11) has no slots by name.
  return "keras-v2" if hasattr(optimizer, "get_slot") else "keras"


def _slot_of(optimizer, flavour, variable, slot, variables):
  """The live slot variable, created first if need be."""
  if flavour == "v1":
    if optimizer.get_slot(variable, slot) is None:
      optimizer._create_slots(variables)  # pylint: disable=protected-access
    return optimizer.get_slot(variable, slot)
  if flavour == "keras-v2":
    keras_compat.create_keras_optimizer_slots(optimizer, variables)
    return optimizer.get_slot(variable, slot)
  optimizer.build(variables)
  index = keras_compat.keras_slot_index(optimizer, variable)
  if slot == "momentum":
    return optimizer.momentums[index]
  return (optimizer._momentums if slot == "m"  # pylint: disable=protected-access
          else optimizer._velocities)[index]  # pylint: disable=protected-access


def _slots_as(state, target, rate):
  """The slots in `target`'s convention: momentum is v1's accumulator
  (update = rate x accumulator) or Keras's velocity (update = -velocity)."""
  slots = dict(state.slots)
  if "momentum" in slots and (state.flavour in KERAS) != (target in KERAS):
    factor = -rate if target in KERAS else -1.0 / rate
    slots["momentum"] = {n: (v * np.float32(factor)).astype(np.float32)
                         for n, v in slots["momentum"].items()}
  return slots


def _beta_powers(state):
  """v1's (beta1^(step+1), beta2^(step+1)): the stored running products,
  or computed from a Keras step."""
  if state.optimizer != "adam":
    return None
  if state.beta_powers:
    return state.beta_powers
  t = state.step + 1
  return tuple(float(np.float32(beta) ** np.float32(t))
               for beta in (ADAM_BETA1, ADAM_BETA2))


def _make_newest(model_dir, prefix):
  # Only the converted checkpoint is listed: a CheckpointManager sweeps the
  # listed ones it does not keep, and the old ones are the way back.
  resume.write_state(model_dir, [prefix])


def _log(state, target, prefix):
  inexact = []
  if state.optimizer == "adam" and (state.flavour in KERAS) != (target in KERAS):
    inexact.append("Adam's beta^t recomputed from the step (last-bit "
                   "differences in the next updates)")
  if (state.optimizer == "momentum"
      and (state.flavour in KERAS) != (target in KERAS)):
    inexact.append("momentum rescaled by the step's learning rate (exact "
                   "only if the rate was constant before it)")
  logging.info("Converted %s (%s checkpoint, %s, step %d) to %s (%s): "
               "weights, optimizer state, step%s", os.path.basename(state.path),
               state.flavour, state.optimizer, state.step,
               os.path.basename(prefix), target,
               "; not exact: " + "; ".join(inexact) if inexact else "")
