"""docs/architecture.md is the map of the server: a table row for every module, named by its
path from ``server/tiller`` (``core/turn/loop.py``), every package named by its folder
(``core/turn/``), and nothing the server lacks; the functions its prompt's walk names exist
where it says. The other docs name no module at a path it has left."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).parents[2]
PACKAGE = REPO / "server" / "tiller"
DOCS = REPO / "docs"
DOC = DOCS / "architecture.md"
TEXT = DOC.read_text(encoding="utf-8")

PREFIX = "server/tiller/"
"""A path written from the repository's root to the package: the same module."""
FROM_REPO = ("bench/", "docs/", "scripts/", "tests/", "vscode-extension/")
"""Paths that start here are the repository's, not the package's."""

PY_PATH = re.compile(r"(?<![\w./~-])((?:[\w-]+/)*[\w-]+\.py)(?![\w/])")
FOLDER = re.compile(r"`((?:[\w-]+/)+)`")
WALK_HOP = re.compile(r"^\d+\. `([^`]+\.py)` `([\w.]+)`", re.MULTILINE)


def modules() -> set[str]:
    """Every module of the server but the ``__init__.py`` files (a package is named instead)."""
    return {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py"
    }


def packages() -> set[str]:
    """Every package under ``tiller`` as its folder: ``core/turn/``."""
    return {
        init.parent.relative_to(PACKAGE).as_posix() + "/"
        for init in PACKAGE.rglob("__init__.py")
        if init.parent != PACKAGE
    }


def in_package(path: str) -> str | None:
    """``path`` from ``server/tiller``, or None when it is the repository's (``bench/x.py``)."""
    if path.startswith(PREFIX):
        return path.removeprefix(PREFIX)
    if path.startswith(FROM_REPO):
        return None
    return path


def named_modules(text: str) -> set[str]:
    return set(PY_PATH.findall(text))


def section(title: str) -> str:
    """The text of the ``## title...`` section, up to the next ``## `` heading."""
    start = TEXT.index(f"\n## {title}")
    end = TEXT.find("\n## ", start + 1)
    return TEXT[start : end if end != -1 else None]


def defines(module: Path, qualname: str) -> bool:
    """Whether ``module`` defines ``qualname`` (``Turn.run``: a method of a class) at its top."""
    body = ast.parse(module.read_text(encoding="utf-8")).body
    for name in qualname.split("."):
        found = [
            node
            for node in body
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name == name
        ]
        if not found:
            return False
        body = found[0].body
    return True


def module_rows() -> list[str]:
    """The modules that head a table row (``| `core/turn/loop.py` | what it is for |``)."""
    return [
        name
        for line in TEXT.splitlines()
        if line.startswith("| `")
        for name in re.findall(r"`([^`]+\.py)`", line.split("|")[1])
    ]


def test_architecture_doc_has_a_row_for_every_module() -> None:
    rows = module_rows()
    assert sorted({row for row in rows if rows.count(row) > 1}) == []  # one row each
    unnamed = sorted(modules() - {in_package(row) for row in rows})
    assert not unnamed, f"modules without a row in docs/architecture.md: {unnamed}"


def test_architecture_doc_names_no_module_the_server_lacks() -> None:
    missing = []
    for path in sorted(named_modules(TEXT)):
        inside = in_package(path)
        where = REPO / path if inside is None else PACKAGE / inside
        if not where.is_file():
            missing.append(path)
    assert not missing, f"docs/architecture.md names modules that are not there: {missing}"


def test_architecture_doc_names_every_package_and_no_other_folder() -> None:
    folders = set(FOLDER.findall(TEXT))
    unnamed = sorted(packages() - {in_package(folder) for folder in folders})
    assert not unnamed, f"packages docs/architecture.md does not name: {unnamed}"
    missing = []
    for folder in sorted(folders):
        inside = in_package(folder)
        where = REPO / folder if inside is None else PACKAGE / inside / "__init__.py"
        if not where.exists():
            missing.append(folder)
    assert not missing, f"docs/architecture.md names folders that are not packages: {missing}"


def test_prompt_walk_names_functions_where_they_are() -> None:
    hops = WALK_HOP.findall(section("A prompt's walk"))
    assert len(hops) >= 20  # the walk is a numbered list: `path.py` `function` on each line
    absent = [
        f"{path} {qualname}"
        for path, qualname in hops
        if not (PACKAGE / path).is_file() or not defines(PACKAGE / path, qualname)
    ]
    assert not absent, f"the walk names what is not there: {absent}"


def test_other_docs_name_no_module_at_a_path_it_left() -> None:
    """A path into a package of the server (``workspace/bash/readonly.py``, or from
    ``server/tiller/``) in docs/*.md or README.md names a module that is there."""
    top = {folder.split("/")[0] for folder in packages()}
    stale = []
    for doc in sorted([*DOCS.glob("*.md"), REPO / "README.md"]):
        if doc == DOC:
            continue  # its own tests are stricter
        for path in sorted(named_modules(doc.read_text(encoding="utf-8"))):
            inside = in_package(path)
            if inside is None or (inside == path and path.split("/")[0] not in top):
                continue  # the repository's own path, a bare name, or an example (`src/a.py`)
            if not (PACKAGE / inside).is_file():
                stale.append(f"{doc.relative_to(REPO)}: {path}")
    assert not stale, f"docs naming modules that are not there: {stale}"
