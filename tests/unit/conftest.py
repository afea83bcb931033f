"""Fixtures the unit tests share: a real temp workspace, a directory outside it, and a tool
context on the workspace. A test module that needs more in the workspace overrides ``ws``
with a fixture of the same name that takes this one."""

from __future__ import annotations

from pathlib import Path

import pytest

from disk import SECRET
from tiller.tools.base import ReadLedger, ToolContext
from tiller.workspace.roots import WorkspaceRoots
from xdist_groups import pytest_runtest_setup  # noqa: F401  (a hook: the guard on groups)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """An empty workspace (``tmp_path`` is already resolved: no symlink in its path)."""
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace holding ``secret.txt`` (``SECRET``)."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text(f"{SECRET}\n")
    return out


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    """A tool context on ``ws``, without an editor, a terminal or live output."""
    return ToolContext(roots=WorkspaceRoots.of(ws), reads=ReadLedger())
