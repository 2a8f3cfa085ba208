"""README.md and docs/ stay true to the code.

    the main command and make's targets are shown
    every command: `python -m M` names a module of this repository, a
      `tools/X.py` exists, every `--flag` is one that command defines,
      every `make TARGET` is a Makefile target
    every path (`tools/...`, `docs/...`, `legacy_hvd/...`, `tests/...`,
      `flags/...`, `constraints/...`) and every relative link exists
    every console script named is one setup.py installs, for that module
    the touch-point table: each row's function holds a `# Horovod:` comment
    every trainer flag is in docs/flags.md with its default
    the README's map lists every docs/*.md page, and each one exists
    the supported Python versions are stated the same way everywhere

Reads files only (no TensorFlow, no Horovod): a second or two.
"""
import ast
import glob
import importlib
import os
import re
import shlex

from absl import flags
import pytest

import flags as trainer_definitions
from tests.helpers import REPO


def read(path):
  with open(os.path.join(REPO, path)) as f:
    return f.read()


README = "README.md"
DOCS = sorted(os.path.relpath(p, REPO)
              for p in glob.glob(os.path.join(REPO, "docs", "*.md")))
PAGES = [README] + DOCS
MAIN_COMMAND = "horovodrun -np 4 python -m legacy_hvd.train --batch_size=64"


# --- what the code defines ---------------------------------------------------

def trainer_flags(module):
  """The FlagValues of one trainer entry point (None for other modules)."""
  if module not in trainer_definitions.TRAINERS:
    return None
  flag_values = flags.FlagValues()
  for define in trainer_definitions.TRAINERS[module]:
    define(flag_values)
  return flag_values


TRAINERS = tuple(trainer_definitions.TRAINERS)
# absl's own flags, which every absl entry point takes.
ABSL_FLAGS = {"help", "helpshort", "helpfull", "helpxml", "flagfile",
              "undefok", "only_check_args"}


def module_file(module):
  """The file `python -m module` runs, or None if there is none here."""
  base = os.path.join(REPO, *module.split("."))
  for candidate in (base + ".py", os.path.join(base, "__main__.py")):
    if os.path.isfile(candidate):
      return candidate
  return None


def string(node):
  """The value of a string literal node (ast.Str on Python 3.7), else None."""
  value = getattr(node, "value", getattr(node, "s", None))
  return value if isinstance(value, str) else None


def absl_flag_names(path):
  """Flags an absl entry point defines: its own DEFINE_* calls and the
  flags package's define_*() functions it calls."""
  tree = ast.parse(read(path))
  imported = {}  # local name -> "flags.module" or "flags.module:function"
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and node.module and (
        node.module == "flags" or node.module.startswith("flags.")):
      for alias in node.names:
        local = alias.asname or alias.name
        if node.module == "flags" and not alias.name.startswith("define"):
          imported[local] = "flags." + alias.name
        else:
          imported[local] = node.module + ":" + alias.name
  names = set()
  flag_values = flags.FlagValues()
  for node in ast.walk(tree):
    if not isinstance(node, ast.Call):
      continue
    func = node.func
    if (isinstance(func, ast.Attribute) and func.attr.startswith("DEFINE")
        and node.args and string(node.args[0]) is not None):
      names.add(string(node.args[0]))
    elif (isinstance(func, ast.Attribute) and func.attr.startswith("define_")
          and isinstance(func.value, ast.Name)
          and func.value.id in imported):
      module = importlib.import_module(imported[func.value.id].split(":")[0])
      getattr(module, func.attr)(flag_values)
    elif isinstance(func, ast.Name) and func.id in imported and ":" in (
        imported[func.id]):
      module, name = imported[func.id].split(":")
      getattr(importlib.import_module(module), name)(flag_values)
  return names | set(flag_values)


def argparse_flag_names(path):
  return set(re.findall(r"""add_argument\(\s*["']--([\w-]+)["']""",
                        read(path)))


def makefile_targets():
  targets = set()
  for line in read("Makefile").splitlines():
    match = re.match(r"^([\w.-]+(?:\s+[\w.-]+)*)\s*:(?!=)", line)
    if match and not line.startswith("\t"):
      targets.update(match.group(1).split())
  return targets


def console_scripts():
  """setup.py's console scripts: name -> module."""
  return {name: module for name, module in re.findall(
      r"""["'](legacy-hvd-[\w-]+)\s*=\s*([\w.]+):\w+["']""", read("setup.py"))}


# --- what the pages say ------------------------------------------------------

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def commands(page):
  """(where, command line) for every shell command on a page: the lines of
  ```sh blocks (continuations joined) and the inline code spans that run
  something."""
  text = read(page)
  found = []
  for match in FENCE.finditer(text):
    if match.group(1) != "sh":
      continue
    for line in match.group(2).replace("\\\n", " ").splitlines():
      if line.strip():
        found.append((page + " (code block)", line))
  prose = FENCE.sub("", text)
  for span in re.findall(r"`([^`]+)`", prose):
    span = " ".join(span.split())
    if re.match(r"(make|horovodrun|mpirun|python)\b", span) or (
        "python -m " in span or "python tools/" in span):
      found.append((page, span))
  return found


def tokens(line):
  try:
    return shlex.split(line, comments=True)
  except ValueError:  # an apostrophe in a placeholder (<lh1's anchor pid>)
    return line.split("#")[0].split()


def check_flag(command, flag, errors, where, line):
  name = flag[2:].split("=")[0].strip("[]")
  if not re.match(r"^\w[\w-]*$", name):
    return
  kind, target = command
  if kind == "module":
    defined = trainer_flags(target)
    if defined is not None:
      negated = name.startswith("no") and name[2:] in defined and isinstance(
          defined[name[2:]], flags.BooleanFlag)
      ok = name in defined or negated or name in ABSL_FLAGS
    else:
      path = module_file(target)
      names = absl_flag_names(os.path.relpath(path, REPO))
      if not names:  # an argparse tool run as a module (tools.peak_rss)
        names = argparse_flag_names(os.path.relpath(path, REPO))
      ok = name in names or name in ABSL_FLAGS
  else:
    ok = name in argparse_flag_names(target)
  if not ok:
    errors.append(f"{where}: `{line}`: {target} has no --{name}")


def check_command(where, line, errors):
  words = tokens(line)
  command = None  # ("module", "legacy_hvd.train") or ("script", "tools/x.py")
  i = 0
  while i < len(words):
    word = words[i]
    if word in ("|", ";", "&&", ">", "2>&1") or word.startswith(">"):
      command = None
    elif word in ("horovodrun", "mpirun", "nsenter"):
      command = None
    elif re.match(r"^(\S*/)?python[\d.]*$", word) and i + 1 < len(words):
      # python -m MODULE, or python SCRIPT.py: what the flags after it go to.
      if words[i + 1] == "-m" and i + 2 < len(words):
        run, width = ("module", words[i + 2]), 3
      elif words[i + 1].endswith(".py"):
        run, width = ("script", words[i + 1]), 2
      else:
        run = None
      if run is not None:
        exists = (module_file(run[1]) is not None if run[0] == "module"
                  else os.path.isfile(os.path.join(REPO, run[1])))
        if not exists:
          errors.append(f"{where}: `{line}`: no {run[0]} {run[1]} here")
        command = run if exists else None
        i += width
        continue
    elif re.match(r"^legacy_hvd(\.\w+)+$", word) and command is not None:
      # A module handed to a tool (python -m tools.peak_rss DIR legacy_hvd.train)
      if module_file(word) is None:
        errors.append(f"{where}: `{line}`: no module {word} here")
      command = ("module", word)
    elif word == "make":
      target = None
      for arg in words[i + 1:]:
        if arg.startswith("ARGS="):
          continue
        if "=" in arg or arg.startswith("-"):
          continue
        if re.match(r"^[a-z][\w-]*$", arg):
          target = target or arg
          if arg not in makefile_targets():
            errors.append(f"{where}: `{line}`: the Makefile has no target {arg}")
      for arg in words[i + 1:]:
        if arg.startswith("ARGS=") and target in (None, "train", "all"):
          for flag in tokens(arg[len("ARGS="):]):
            if flag.startswith("--"):
              check_flag(("module", "legacy_hvd.train"), flag, errors, where,
                         line)
      return
    elif word.startswith("--") and command is not None:
      check_flag(command, word, errors, where, line)
    i += 1


PATH = re.compile(r"(?<![\w/.~-])((?:tools|docs|tests|legacy_hvd|flags|constraints)"
                  r"/[\w/.-]*\w)")


def test_main_job_command_is_shown():
  text = read(README)
  assert MAIN_COMMAND in text
  assert "make test" in text and "make train" in text


@pytest.mark.parametrize("page", PAGES)
def test_every_command_is_true(page):
  errors = []
  for where, line in commands(page):
    check_command(where, line, errors)
  assert not errors, "\n".join(errors)


@pytest.mark.parametrize("page", PAGES)
def test_flags_in_a_command_row_are_that_commands(page):
  """A table row about one `python -m M` names only M's flags."""
  errors = []
  for row in re.findall(r"^\|.*\|$", read(page), re.MULTILINE):
    modules = set(re.findall(r"python -m ([\w.]+)", row))
    if len(modules) != 1 or module_file(next(iter(modules))) is None:
      continue
    command = ("module", next(iter(modules)))
    for flag in re.findall(r"`(--\w+)[^`]*`", row):
      check_flag(command, flag, errors, page, row[:60] + "...")
  assert not errors, "\n".join(errors)


@pytest.mark.parametrize("page", PAGES)
def test_every_path_and_link_exists(page):
  text = read(page)
  missing = [path for path in sorted(set(PATH.findall(text)))
             if not os.path.exists(os.path.join(REPO, path))
             and "*" not in path]
  here = os.path.dirname(page)
  for link in re.findall(r"\]\(([^)\s]+)\)", text):
    if re.match(r"^\w+:", link):
      continue
    target = os.path.normpath(os.path.join(here, link.split("#")[0]))
    if not os.path.exists(os.path.join(REPO, target)):
      missing.append(f"link {link}")
  assert not missing, f"{page} names what does not exist: {missing}"


def test_console_scripts_are_the_ones_setup_installs():
  scripts = console_scripts()
  text = "\n".join(read(page) for page in PAGES)
  named = set(re.findall(r"\blegacy-hvd-[a-z0-9]+(?:-[a-z0-9]+)*", text))
  assert named - set(scripts) == set(), "not console scripts of setup.py"
  assert set(scripts) - set(re.findall(
      r"legacy-hvd-[a-z0-9-]*[a-z0-9]", read(README))) == set(), (
          "console scripts missing from README")
  for name, module in scripts.items():
    assert module_file(module.rsplit(".__main__", 1)[0]), (name, module)
  # The README's entry-point rows pair a module with its script.
  for row in re.findall(r"^\|.*$", read(README), re.MULTILINE):
    module = re.search(r"python -m ([\w.]+)", row)
    script = re.search(r"`(legacy-hvd-[\w-]+)`", row)
    if module and script:
      assert scripts[script.group(1)].startswith(module.group(1)), row


# --- the touch-point table ---------------------------------------------------

TOUCH_ROW = re.compile(
    r"^\|[^|\n]+\|\s*`(legacy_hvd/[\w/]+\.py)`\s*\|\s*`([\w.]+)`\s*\|\s*$",
    re.MULTILINE)


def touch_rows():
  return [(page,) + row for page in PAGES for row in TOUCH_ROW.findall(
      read(page))]


def last_line(node):
  end = getattr(node, "end_lineno", None)  # Python >= 3.8
  return end or max(getattr(n, "lineno", 0) for n in ast.walk(node))


def functions(tree):
  """dotted name -> (first line, last line, [(first, last) of nested defs])."""
  found = {}

  def visit(node, prefix):
    for child in ast.iter_child_nodes(node):
      if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                            ast.ClassDef)):
        name = prefix + child.name
        nested = [(n.lineno, last_line(n)) for n in ast.walk(child)
                  if n is not child and isinstance(
                      n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        found[name] = (child.lineno, last_line(child), nested)
        visit(child, name + ".")
      else:
        visit(child, prefix)

  visit(tree, "")
  return found


def horovod_functions(path):
  """The functions of a file whose own lines hold a touch point's comment:
  `# Horovod:`, or `# tf.distribute:` (legacy_hvd.train_mwms's path)."""
  source = read(path)
  lines = source.splitlines()
  result = set()
  for name, (first, last, nested) in functions(ast.parse(source)).items():
    for number in range(first, last + 1):
      if any(a <= number <= b for a, b in nested):
        continue
      if re.search(r"#\s*(Horovod|tf\.distribute):", lines[number - 1]):
        result.add(name)
        break
  return result


def test_touch_point_table_is_there():
  rows = touch_rows()
  assert len(rows) >= 15, "the touch-point table lost its rows"


@pytest.mark.parametrize("page,path,function", touch_rows())
def test_touch_point_function_holds_a_horovod_comment(page, path, function):
  assert os.path.isfile(os.path.join(REPO, path)), f"{page}: no {path}"
  defined = functions(ast.parse(read(path)))
  assert function in defined, f"{page}: {path} has no function {function}"
  assert function in horovod_functions(path), (
      f"{page}: {path}: {function} holds no `# Horovod:` (or "
      "`# tf.distribute:`) comment")


def test_touch_point_table_covers_the_main_job():
  """Every function of the TF1 job with a touch point is in the table."""
  listed = {function for _, path, function in touch_rows()
            if path == "legacy_hvd/train.py"}
  missing = horovod_functions("legacy_hvd/train.py") - listed
  assert not missing, f"touch points of legacy_hvd/train.py not in the table: {missing}"


def test_layout_lists_every_module():
  listed = set(re.findall(r"`(legacy_hvd/[\w/]+\.py)`", read("docs/layout.md")))
  modules = {os.path.relpath(p, REPO) for p in glob.glob(
      os.path.join(REPO, "legacy_hvd", "**", "*.py"), recursive=True)
             if os.path.basename(p) != "__init__.py"}
  assert not modules - listed, f"modules missing from docs/layout.md: {sorted(modules - listed)}"


# --- flags -------------------------------------------------------------------

def flag_rows(page):
  return dict(re.findall(r"^\| `--(\w+)` \| ([^|]*) \|", read(page),
                         re.MULTILINE))


@pytest.mark.parametrize("module", TRAINERS)
def test_every_trainer_flag_is_documented_with_its_default(module):
  rows = flag_rows("docs/flags.md")
  defined = trainer_flags(module)
  missing = sorted(set(defined) - set(rows))
  assert not missing, f"{module} flags missing from docs/flags.md: {missing}"
  wrong = {name: (rows[name].strip(), str(defined[name].default))
           for name in defined if rows[name].strip() != str(
               defined[name].default)}
  assert not wrong, f"docs/flags.md defaults (shown, actual): {wrong}"


@pytest.mark.parametrize("page", [README, "docs/flags.md"])
def test_every_flag_row_is_a_trainer_flag_with_its_default(page):
  every = {}
  for module in TRAINERS:
    defined = trainer_flags(module)
    every.update({name: defined[name] for name in defined})
  for name, default in flag_rows(page).items():
    assert name in every, f"{page}: --{name} is no trainer flag"
    assert default.strip() == str(every[name].default), (
        f"{page}: --{name} shows {default.strip()}, "
        f"the default is {every[name].default}")


# --- the docs map ------------------------------------------------------------

def test_readme_maps_every_docs_page():
  mapped = re.findall(r"^\| \[(docs/[\w.-]+\.md)\]\(\1\) \|", read(README),
                      re.MULTILINE)
  assert len(mapped) == len(set(mapped)), "a page is in the map twice"
  missing = [page for page in mapped
             if not os.path.isfile(os.path.join(REPO, page))]
  assert not missing, f"the README's map names missing pages: {missing}"
  unmapped = sorted(set(DOCS) - set(mapped))
  assert not unmapped, f"docs pages not in the README's map: {unmapped}"


def test_readme_is_short():
  assert len(read(README).splitlines()) <= 300


# --- supported versions ------------------------------------------------------

def supported_pythons():
  """TensorFlow version -> Python range, from docs/stacks.md's table."""
  return dict(re.findall(r"^\| TensorFlow ([\d.]+) .*?\| ([\d.-]+) \|",
                         read("docs/stacks.md"), re.MULTILINE))


def test_supported_pythons_are_stated_the_same_everywhere():
  pythons = supported_pythons()
  assert set(pythons) == {"2.15.1", "1.15.5", "2.16.2", "2.18.1", "2.21.0"}, (
      pythons)
  readme = " ".join(read(README).split())
  for tf_version, python in pythons.items():
    stated = re.search(r"Python ([\d.-]+) for TensorFlow (?:[\d.]+ and )?"
                       + re.escape(tf_version), readme)
    assert stated and stated.group(1) == python, (tf_version, python)
  docstring = ast.get_docstring(ast.parse(read("legacy_hvd/common/compat.py")))
  for python in set(pythons.values()):
    assert python in docstring, f"compat's docstring does not say {python}"
