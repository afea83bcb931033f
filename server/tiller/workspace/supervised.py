"""How Tiller starts a program it must be able to stop (a command, an MCP or language server):
under ``supervisor.py``, a script of its own run as ``python -I -S``, so the program and
everything it starts end with it and die with the server, even after ``kill -9``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

SUPERVISOR = Path(__file__).with_name("supervisor.py")


def supervised(argv: Sequence[str], parent: int, status_fd: int = -1) -> list[str]:
    """``argv`` under the supervisor, which checks that its parent is ``parent`` and writes what
    it saw to ``status_fd`` (-1: nowhere)."""
    return [sys.executable, "-I", "-S", str(SUPERVISOR), str(parent), str(status_fd), *argv]
