"""The package's layers and indexes, as its docstrings state them, hold.

legacy_hvd/__init__.py names every module and the layer it belongs to; this
reads every module's imports (ast, nothing is imported) and checks that no
module reaches above its layer, that the model side and the foundation
never import Horovod, that only entry points import `flags`, that there is
no import cycle, and that the indexes in docstrings name what exists.
"""
import ast
import os
import re

import pytest

from tests.helpers import REPO

PACKAGE = os.path.join(REPO, "legacy_hvd")
LAYERS = ("foundation", "model side", "distributed side", "trainer core")
ENTRY_POINTS = ("train", "train_tf2", "train_keras", "train_estimator",
                "evaluate", "export", "predict", "preflight", "slurm",
                "supervise", "data.__main__")


def package_docstring():
  with open(os.path.join(PACKAGE, "__init__.py")) as f:
    return ast.get_docstring(ast.parse(f.read()))


def layer_of():
  """{module: layer} from the package docstring's "layer: a, b, ..." lines
  (a list may continue on the next indented lines until a sentence)."""
  found = {}
  text = package_docstring()
  for layer in LAYERS:
    match = re.search(rf"^  {layer}: ((?:[\w.]+,\s+)*[\w.]+)$", text,
                      re.MULTILINE)
    assert match, f"the package docstring names no '{layer}' modules"
    for name in re.split(r",\s+", match.group(1)):
      found[name] = layer
  return found


def entry_points_in_docstring():
  return re.findall(r"^  (\w+) {2,}\S", package_docstring(), re.MULTILINE)


def all_modules():
  """Dotted names under legacy_hvd/ ('train', 'data.cifar10', ...)."""
  names = []
  for root, _, files in os.walk(PACKAGE):
    for file in files:
      if file.endswith(".py") and file != "__init__.py":
        path = os.path.relpath(os.path.join(root, file), PACKAGE)
        names.append(path[:-3].replace(os.sep, "."))
  return sorted(names)


def imports(module):
  """(own modules imported, third-party top-level packages imported)."""
  with open(os.path.join(PACKAGE, *module.split(".")) + ".py") as f:
    tree = ast.parse(f.read())
  own, others = set(), set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for alias in node.names:
        if alias.name.startswith("legacy_hvd."):
          own.add(alias.name[len("legacy_hvd."):])
        else:
          others.add(alias.name.split(".")[0])
    elif isinstance(node, ast.ImportFrom) and node.module:
      if node.module in ("legacy_hvd", "legacy_hvd.data"):
        prefix = node.module[len("legacy_hvd."):]
        own.update(f"{prefix}.{a.name}".lstrip(".") for a in node.names)
      elif node.module.startswith("legacy_hvd."):
        own.add(node.module[len("legacy_hvd."):])
      else:
        others.add(node.module.split(".")[0])
  return own, others


def test_the_docstring_places_every_module_once():
  layers, entries = layer_of(), set(entry_points_in_docstring())
  assert entries == {e.split(".")[0] for e in ENTRY_POINTS}
  listed = set(layers) | set(ENTRY_POINTS)
  assert not set(layers) & set(ENTRY_POINTS)
  assert sorted(listed) == all_modules(), (
      f"missing from the docstring: {sorted(set(all_modules()) - listed)}; "
      f"not modules: {sorted(listed - set(all_modules()))}")


@pytest.mark.parametrize("module", all_modules())
def test_no_module_reaches_above_its_layer(module):
  layers = layer_of()
  own, others = imports(module)
  if module in ENTRY_POINTS:
    assert not own & set(ENTRY_POINTS) - {module}, "an entry point imports another"
    return
  rank = LAYERS.index(layers[module])
  for imported in own:
    assert imported not in ENTRY_POINTS, f"{module} imports entry point {imported}"
    assert LAYERS.index(layers[imported]) <= rank, (
        f"{module} ({layers[module]}) imports {imported} "
        f"({layers[imported]})")
  assert "flags" not in others, f"{module} imports flags: only entry points may"
  if layers[module] in ("foundation", "model side"):
    assert "horovod" not in others, f"{module} ({layers[module]}) imports Horovod"


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


def test_compat_index_names_every_helper_and_only_those():
  path = os.path.join(PACKAGE, "compat.py")
  assert docstring_names(path, "compat") == public_names(path)


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
  assert sorted(scripts.values()) == sorted(ENTRY_POINTS)
  for script, module in scripts.items():
    assert script == "legacy-hvd-" + module.split(".")[0].replace("_", "-")
    path = os.path.join(PACKAGE, *module.split(".")) + ".py"
    assert "run" in public_names(path), f"{module} has no run() for {script}"
