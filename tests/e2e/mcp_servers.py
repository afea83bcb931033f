"""Where the tests find the real MCP servers (installed by scripts/setup-node-tests.sh and
scripts/setup-mcp-py.sh, never downloaded at test time) and our own misbehaving one."""

from __future__ import annotations

import sys
from pathlib import Path

from tiller.jsontypes import JSON

HERE = Path(__file__).parent
NPM = HERE / "mcp-npm" / "node_modules" / ".bin"
PY = HERE / "mcp-py" / ".venv" / "bin"
EVERYTHING = NPM / "mcp-server-everything"
FILESYSTEM = NPM / "mcp-server-filesystem"
TIME = PY / "mcp-server-time"
GIT = PY / "mcp-server-git"
MISBEHAVING = HERE.parent / "fixtures" / "mcp_misbehaving.py"
INSTALLED = all(p.exists() for p in (EVERYTHING, FILESYSTEM, TIME, GIT))
NOT_INSTALLED = "run scripts/setup-node-tests.sh and scripts/setup-mcp-py.sh first"


def everything() -> JSON:
    return {"command": str(EVERYTHING), "args": ["stdio"]}


def filesystem(root: Path) -> JSON:
    return {"command": str(FILESYSTEM), "args": [str(root)]}


def time_server() -> JSON:
    return {"command": str(TIME), "args": ["--local-timezone", "UTC"]}


def git(repo: Path) -> JSON:
    return {"command": str(GIT), "args": ["--repository", str(repo)]}


def misbehaving(mode: str) -> JSON:
    return {"command": sys.executable, "args": [str(MISBEHAVING), mode]}
