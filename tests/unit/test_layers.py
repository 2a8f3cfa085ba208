"""The package's rooms and rules, as its docstrings state them, hold.

legacy_hvd/__init__.py names the entry points and the rooms (subpackages),
and for each room the rooms it may import; each room's own docstring names
its modules; docs/layout.md shows the same rooms, rules and modules. This
reads every module's imports (ast, nothing is imported) and checks that no
module imports outside what its room's rule allows, that no room imports an
entry point, that only entry points import `flags`, that Horovod stays in
the entry points and the collectives and training rooms, that the launch room
never reaches TensorFlow, that there is no import cycle, and that the
indexes in docstrings name what exists.
"""
import ast
import os
import re

import pytest

from tests.helpers import REPO

PACKAGE = os.path.join(REPO, "legacy_hvd")
HOROVOD_ROOMS = ("collectives", "training")
ENTRY_POINTS = ("train", "train_tf2", "train_keras", "train_estimator",
                "train_mwms", "train_mwms_keras", "evaluate", "export",
                "predict",
                "launch.preflight", "launch.gpu_check", "launch.slurm", "launch.slurm_task",
                "launch.supervise", "launch.workers", "data.__main__")
# Started by another entry point, never typed: no console script.
INTERNAL = ("launch.slurm_task",)


def docstring(*parts):
  with open(os.path.join(PACKAGE, *parts)) as f:
    return ast.get_docstring(ast.parse(f.read()))


def rules():
  """{room: set of rooms it may import}, from the package docstring's
  `  room  imports: a, b` lines."""
  found = {}
  for room, allowed in re.findall(r"^  (\w+) +imports: (.*)$",
                                  docstring("__init__.py"), re.MULTILINE):
    found[room] = (set() if allowed == "(none)"
                   else set(re.split(r",\s*", allowed)))
  return found


def room_modules(room):
  """The modules a room's docstring lists (`  name  what it holds`)."""
  return re.findall(r"^  (\w+) {2,}\S", docstring(room, "__init__.py"),
                    re.MULTILINE)


def all_modules():
  """Dotted names under legacy_hvd/ ('train', 'training.hooks', ...)."""
  names = []
  for root, _, files in os.walk(PACKAGE):
    for file in files:
      if file.endswith(".py") and file != "__init__.py":
        path = os.path.relpath(os.path.join(root, file), PACKAGE)
        names.append(path[:-3].replace(os.sep, "."))
  return sorted(names)


def room_of(module):
  """A module's room; None for the top-level entry points (and data's
  __main__, which its room's index does not list)."""
  if "." not in module or module == "data.__main__":
    return None
  return module.split(".")[0]


def imports(module, at_import=False):
  """(own modules imported, third-party top-level packages imported);
  at_import: only what importing the module runs (not a function's own
  imports, made when it is called)."""
  modules = set(all_modules())
  with open(os.path.join(PACKAGE, *module.split(".")) + ".py") as f:
    tree = ast.parse(f.read())
  own, others = set(), set()
  nodes = tree.body if at_import else ast.walk(tree)
  for node in nodes:
    if isinstance(node, ast.Import):
      for alias in node.names:
        if alias.name.startswith("legacy_hvd."):
          own.add(alias.name[len("legacy_hvd."):])
        else:
          others.add(alias.name.split(".")[0])
    elif isinstance(node, ast.ImportFrom) and node.module:
      if node.module == "legacy_hvd" or node.module.startswith("legacy_hvd."):
        base = node.module[len("legacy_hvd."):]
        for alias in node.names:
          name = f"{base}.{alias.name}".lstrip(".")
          own.add(name if name in modules else base)
      else:
        others.add(node.module.split(".")[0])
  return own - {""}, others


def test_every_module_is_an_entry_point_or_in_a_listed_room():
  entries = re.findall(r"^  (\w+) {2,}\S", docstring("__init__.py").split(
      "Rooms, one")[0], re.MULTILINE)
  assert set(entries) == {e for e in ENTRY_POINTS if "." not in e}
  rooms = rules()
  for module in all_modules():
    room = room_of(module)
    assert room is None or room in rooms, f"{module}: room {room} not listed"
  for room in rooms:
    files = sorted(m.split(".", 1)[1] for m in all_modules()
                   if room_of(m) == room)
    assert sorted(room_modules(room)) == files, (
        f"legacy_hvd/{room}/__init__.py lists {sorted(room_modules(room))}, "
        f"the folder holds {files}")
  for room, allowed in rooms.items():
    assert allowed <= set(rooms), f"{room} may import unknown rooms"


@pytest.mark.parametrize("module", all_modules())
def test_no_module_imports_outside_its_rules(module):
  own, others = imports(module)
  room = room_of(module)
  for imported in own - {module}:
    assert imported not in ENTRY_POINTS, f"{module} imports entry point {imported}"
  if module not in ENTRY_POINTS:
    assert "flags" not in others, f"{module} imports flags: only entry points may"
  if room is None:
    return
  allowed = rules()[room] | {room}
  for imported in own:
    assert room_of(imported) in allowed, (
        f"{module} (room {room}) imports {imported}: {room} may import "
        f"{sorted(allowed)}")
  if room not in HOROVOD_ROOMS and module not in ENTRY_POINTS:
    assert "horovod" not in others, f"{module} (room {room}) imports Horovod"


def test_importing_the_launch_room_never_imports_tensorflow():
  for module in all_modules():
    if room_of(module) != "launch":
      continue
    seen, todo = set(), [module]
    while todo:
      current = todo.pop()
      if current in seen:
        continue
      seen.add(current)
      own, others = imports(current, at_import=True)
      assert not {"tensorflow", "horovod"} & others, (
          f"{module} reaches TensorFlow or Horovod through {current}")
      todo.extend(own)


def test_no_import_cycles():
  graph = {module: imports(module)[0] for module in all_modules()}
  state = {}

  def visit(module, path):
    if state.get(module) == "done":
      return
    assert state.get(module) != "open", " -> ".join(path + [module])
    state[module] = "open"
    for imported in sorted(graph.get(module, ())):
      visit(imported, path + [module])
    state[module] = "done"

  for module in graph:
    visit(module, [])


def test_layout_page_shows_the_same_rooms_rules_and_modules():
  with open(os.path.join(REPO, "docs", "layout.md")) as f:
    page = f.read()
  sections = re.split(r"^### ", page, flags=re.MULTILINE)[1:]
  shown = {}
  for section in sections:
    match = re.match(r"`legacy_hvd/(\w+)/` \(imports: (.*)\)", section)
    if match:
      allowed = (set() if match.group(2) == "none"
                 else set(re.split(r",\s*", match.group(2))))
      modules = re.findall(rf"^\| `legacy_hvd/{match.group(1)}/(\w+)\.py` \|",
                           section, re.MULTILINE)
      shown[match.group(1)] = (allowed, sorted(modules))
  expected = {room: (allowed, sorted(room_modules(room)))
              for room, allowed in rules().items()}
  assert shown == expected


def docstring_names(path, prefix):
  """Names written as `prefix.name` in a module's docstring."""
  with open(path) as f:
    text = ast.get_docstring(ast.parse(f.read()))
  return set(re.findall(rf"\b{prefix}\.(\w+)", text))


def public_names(path):
  with open(path) as f:
    tree = ast.parse(f.read())
  names = set()
  for node in tree.body:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
      names.add(node.name)
    elif isinstance(node, ast.Assign):
      names.update(t.id for t in node.targets if isinstance(t, ast.Name))
  return {n for n in names if not n.startswith("_")}


# The modules that answer "how do I do X on this stack", each indexing its
# helpers in its docstring as `module.name`.
COMPAT_MODULES = ("common.compat", "model.keras_compat", "data.tar_extraction",
                  "checkpoints.state_proto")


@pytest.mark.parametrize("module", COMPAT_MODULES)
def test_compat_index_names_every_helper_and_only_those(module):
  path = os.path.join(PACKAGE, *module.split(".")) + ".py"
  assert docstring_names(path, module.split(".")[-1]) == public_names(path)


def test_data_index_names_every_module_and_what_exists():
  path = os.path.join(PACKAGE, "data", "__init__.py")
  modules = {m.split(".")[1] for m in all_modules()
             if m.startswith("data.") and m != "data.__main__"}
  with open(path) as f:
    text = ast.get_docstring(ast.parse(f.read()))
  for module in modules:
    assert re.search(rf"\b{module}\b", text), f"data/{module}.py not named"
  for module, name in re.findall(r"\b(cifar10|pipeline|download|embedded)"
                                 r"\.(\w+)\(", text):
    assert name in public_names(os.path.join(PACKAGE, "data",
                                             f"{module}.py")), (
        f"{module}.{name} does not exist")


def test_every_entry_point_has_a_console_script_that_exists():
  with open(os.path.join(REPO, "setup.py")) as f:
    scripts = dict(re.findall(r'"(legacy-hvd-[\w-]+)=legacy_hvd\.([\w.]+):run"',
                              f.read()))
  assert sorted(scripts.values()) == sorted(set(ENTRY_POINTS) - set(INTERNAL))
  # The names users type: legacy-hvd-NAME for legacy_hvd.NAME, the
  # launchers' kept from before they moved into launch/.
  assert {script: module for script, module in scripts.items()
          if "." in module} == {
              "legacy-hvd-preflight": "launch.preflight",
              "legacy-hvd-gpu-check": "launch.gpu_check",
              "legacy-hvd-slurm": "launch.slurm",
              "legacy-hvd-supervise": "launch.supervise",
              "legacy-hvd-launch-workers": "launch.workers",
              "legacy-hvd-data": "data.__main__"}
  for script, module in scripts.items():
    if "." not in module:
      assert script == "legacy-hvd-" + module.replace("_", "-")
    path = os.path.join(PACKAGE, *module.split(".")) + ".py"
    assert "run" in public_names(path), f"{module} has no run() for {script}"
