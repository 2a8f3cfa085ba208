"""Prose that earns its lines: the package's docstrings and comments are at
most a fifth of its lines (issue 43; 31 % when it was filed).

A line is prose when it lies in a module, class or function docstring or
holds only a comment; blank lines count as lines. Read with ast and tokenize:
nothing is imported.
"""
import ast
import io
import os
import tokenize

import pytest

from tests.helpers import REPO

# Python 3.7's ast has no end_lineno; what this counts is the same on every
# stack.
pytestmark = pytest.mark.one_stack

MOST_PROSE = 0.20


def prose_and_lines(text):
  """(docstring or comment-only lines, all lines) of one module's source."""
  prose = set()
  for node in ast.walk(ast.parse(text)):
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                         ast.AsyncFunctionDef)) and node.body:
      first = node.body[0]
      if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
          and isinstance(first.value.value, str)):
        prose.update(range(first.lineno, first.end_lineno + 1))
  comments, code = set(), set()
  for token in tokenize.generate_tokens(io.StringIO(text).readline):
    if token.type == tokenize.COMMENT:
      comments.add(token.start[0])
    elif token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENDMARKER):
      code.update(range(token.start[0], token.end[0] + 1))
  return len(prose | (comments - code)), len(text.splitlines())


def test_counts_docstrings_and_comment_lines_not_trailing_comments():
  text = ('"""Doc\n\nmore."""\nimport os  # trailing\n\n# alone\n'
          'def f():\n  """One."""\n  return os\n')
  assert prose_and_lines(text) == (5, 9)


def test_the_package_is_at_most_a_fifth_prose():
  prose = lines = 0
  for folder, _, files in os.walk(os.path.join(REPO, "legacy_hvd")):
    for name in files:
      if name.endswith(".py"):
        with open(os.path.join(folder, name)) as f:
          counted = prose_and_lines(f.read())
        prose, lines = prose + counted[0], lines + counted[1]
  assert prose <= MOST_PROSE * lines, (
      f"legacy_hvd is {prose / lines:.1%} docstrings and comments ({prose} "
      f"of {lines} lines); expected at most {MOST_PROSE:.0%}")
