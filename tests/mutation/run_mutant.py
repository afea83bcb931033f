"""The mutation run's test command: the module's tests that execute the mutated lines.

cosmic-ray writes a mutant into the module and runs this, which compares the module with its
unmutated copy and then:

- a mutant that does not compile (cosmic-ray makes a few) is no mutant: ``NOT_PYTHON`` in
  the output, status 0;
- a mutant of annotations alone in a module with ``from __future__ import annotations``
  (``str | None`` as ``str & None``) is equivalent: ``ANNOTATION_ONLY``, status 0;
- else it takes the statements holding the changed lines and runs, in this process, only the
  tests that executed them in the run over the unmutated code (``line_map.py``'s map), or
  every test file given when a statement runs at import (module or class level, or a line
  executed outside any test). A mutant no test executes survives at once.

cosmic-ray's ExceptionReplacer names ``CosmicRayTestingException``, defined here (see it).
Exit status: pytest's (a mutant that breaks the module's import counts as killed), except
that a failure of the selection itself (a node id pytest no longer finds, nothing collected)
exits 0 with ``RUNNER_ERROR`` in the output: a survivor to look at, never a kill.

    run_mutant.py MODULE PRISTINE LINE_MAP TEST_FILE[,TEST_FILE...] -- PYTEST_OPTIONS...
"""

from __future__ import annotations

import ast
import builtins
import difflib
import json
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest


class CosmicRayTestingException(Exception):
    """What cosmic-ray's ExceptionReplacer writes in place of a caught exception. Its tests
    run in another process, where the name is not defined: an ``except`` clause naming it
    would raise NameError as soon as any exception reached it, a kill that says nothing about
    the tests. Defined here (in builtins, as cosmic-ray does), the mutant is what it means to
    be: the clause no longer catches the exception it named."""


RUNNER_ERROR = "MUTATION-RUNNER-ERROR"
NOT_PYTHON = "MUTATION-NOT-PYTHON"  # cosmic-ray made a mutant that does not compile
ANNOTATION_ONLY = "MUTATION-ANNOTATION-ONLY"  # equivalent: the module never evaluates them


def changed_lines(original: str, mutated: str) -> set[int]:
    """Line numbers (1-based) of ``original`` that differ in ``mutated``."""
    before, after = original.splitlines(), mutated.splitlines()
    changed: set[int] = set()
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        changed.update(range(i1 + 1, i2 + 1) if i2 > i1 else (i1, i1 + 1))
    return changed


def _without_annotations(tree: ast.Module) -> str:
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.returns = None
        elif isinstance(node, ast.AnnAssign):
            node.annotation = ast.Constant(None)
    return ast.dump(tree)


def annotations_only(original: str, mutated: str) -> bool:
    """Whether ``mutated`` differs from ``original`` in annotations alone, in a module where
    ``from __future__ import annotations`` keeps every annotation a string never evaluated."""
    before, after = ast.parse(original), ast.parse(mutated)
    postponed = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in before.body
    )
    return postponed and _without_annotations(before) == _without_annotations(after)


def _statements(tree: ast.AST, scope: str) -> Iterable[tuple[ast.stmt, str]]:
    """Every statement with the kind of scope it runs in: 'import' (module or class level)
    or 'call' (a function's body)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.stmt):
            yield node, scope
        inner = "call" if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else scope
        yield from _statements(node, inner)


def affected(source: str, lines: set[int]) -> tuple[set[int], bool]:
    """The lines of the innermost statements holding ``lines``, and whether one of those
    statements runs at import."""
    spans: set[int] = set()
    at_import = False
    found = list(_statements(ast.parse(source), "import"))
    for line in lines:
        holders = [
            (stmt, scope)
            for stmt, scope in found
            if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno)
        ]
        if not holders:
            at_import = True  # not inside any statement: be safe
            continue
        stmt, scope = min(holders, key=lambda h: (h[0].end_lineno or h[0].lineno) - h[0].lineno)
        spans.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
        # A def or class line itself (its decorators, defaults, bases) runs at import.
        at_import |= scope == "import" or (
            isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and line <= stmt.body[0].lineno - 1
        )
    return spans, at_import


def select(
    line_map: dict[str, list[int]], spans: set[int], at_import: bool, files: Sequence[str]
) -> list[str]:
    """The pytest arguments naming the tests to run: node ids, or the files for all."""
    if at_import or spans & set(line_map.get("", ())):
        return list(files)
    return [test for test, lines in line_map.items() if test and spans & set(lines)]


def main(argv: Sequence[str]) -> int:
    if "--" not in argv:
        raise SystemExit(__doc__)
    split = list(argv).index("--")
    (module, pristine, map_file, test_files), options = argv[:split], list(argv[split + 1 :])
    original, mutated = Path(pristine).read_text(), Path(module).read_text()
    try:
        compile(mutated, module, "exec")
    except SyntaxError as error:
        print(f"{NOT_PYTHON}: {error}")
        return 0
    if annotations_only(original, mutated):
        print(f"{ANNOTATION_ONLY}: only an annotation changed, and none is evaluated")
        return 0
    lines = changed_lines(original, mutated)
    if not lines:
        print(f"{RUNNER_ERROR}: {module} is the same as {pristine}")
        return 0
    spans, at_import = affected(original, lines)
    line_map: dict[str, list[int]] = json.loads(Path(map_file).read_text())
    tests = select(line_map, spans, at_import, test_files.split(","))
    if not tests:
        print(f"no test executes line {min(lines)} of {module}")
        return 0
    print(f"{len(tests)} tests for line {min(lines)}" if not at_import else "all tests")
    sys.stdout.flush()
    builtins.CosmicRayTestingException = CosmicRayTestingException  # type: ignore[attr-defined]
    status = pytest.main([*options, *tests])
    if status in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.NO_TESTS_COLLECTED):
        if not imports(module):  # a conftest importing it failed: that is a kill
            print(f"the mutant of {module} fails on import")
            return 1
        print(f"{RUNNER_ERROR}: pytest exited {int(status)} on the selected tests")
        return 0
    return int(status)


def imports(module: str) -> bool:
    """Whether the module (a path under server/) imports, in a fresh interpreter."""
    dotted = Path(module).with_suffix("").relative_to("server").as_posix().replace("/", ".")
    done = subprocess.run([sys.executable, "-c", f"import {dotted}"], capture_output=True)
    return done.returncode == 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
