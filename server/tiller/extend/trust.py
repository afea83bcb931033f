"""Workspace trust: whether the user said yes to a folder, kept in the user's own state.

A repository's files are a stranger's input until the user trusts its folder. The decision is
one per folder and lives outside every workspace: Tiller's own record
(``$TILLER_CONFIG_DIR``, else ``~/.config/tiller``, ``/trusted-folders.json``, mode 0600), or
Claude Code's (``~/.claude.json`` ``projects[path].hasTrustDialogAccepted``, so a folder a
migrating user already trusted there is not asked again). A decision covers the folder's
subfolders; the nearest recorded folder decides, and Tiller's own record wins over Claude
Code's at the same depth (a "no" recorded here is never overridden by a "yes" recorded there
for a parent).

What trust changes is the settings layer's business (``settings_layer.py``): this module only
says who decided what.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tiller.extend.settings_files import claude_json_path, read_settings_file, tiller_user_dir
from tiller.jsontypes import JSON

TRUST_FILE: Final = "trusted-folders.json"
MAX_TRUST_FILE_BYTES: Final = 4 * 1_048_576
MAX_CLAUDE_JSON_BYTES: Final = 256 * 1_048_576  # Claude Code keeps every project's state there


@dataclass(frozen=True)
class Trust:
    """Whether the workspace's files may run programs and widen grants, and who said so."""

    trusted: bool
    by: str  # "tiller trust", "Claude Code", "VS Code", "--trust", "not trusted yet", ...

    def describe(self) -> str:
        return f"{'trusted' if self.trusted else 'not trusted'} ({self.by})"


NOT_YET: Final = Trust(False, "not trusted yet")


@dataclass(frozen=True)
class Recorded:
    """A decision found in a record: the folder it names and what it says."""

    folder: str
    trust: Trust


def trust_file(env: Mapping[str, str] | None = None) -> Path:
    return tiller_user_dir(env) / TRUST_FILE


def decided(folder: Path, env: Mapping[str, str] | None = None) -> Trust:
    """The user's decision for ``folder`` (or the nearest folder above it that has one)."""
    env = os.environ if env is None else env
    real = os.path.realpath(folder)
    own = _nearest(real, _tiller_decisions(env), "tiller trust")
    theirs = _nearest(real, _claude_decisions(env), "Claude Code")
    candidates = [r for r in (own, theirs) if r is not None]
    if not candidates:
        return NOT_YET
    # the nearest folder decides; at the same depth Tiller's own record wins
    best = max(candidates, key=lambda r: (len(r.folder), r is own))
    return best.trust


def record(folder: Path, trusted: bool, env: Mapping[str, str] | None = None) -> Path:
    """Keep the user's decision for ``folder`` in Tiller's record (written whole, atomically,
    readable by the user only); returns the record's path."""
    env = os.environ if env is None else env
    path = trust_file(env)
    folders = dict(_read_record(path))
    folders[os.path.realpath(folder)] = {"trusted": trusted, "at": int(time.time())}
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = json.dumps({"version": 1, "folders": folders}, indent=2, sort_keys=True) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{TRUST_FILE}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _nearest(real: str, decisions: Mapping[str, bool], by: str) -> Recorded | None:
    """The decision of ``real`` or of the closest folder above it."""
    current = real
    while True:
        found = decisions.get(current)
        if found is not None:
            return Recorded(current, Trust(found, by))
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _read_record(path: Path) -> dict[str, object]:
    folders = _read_json(path, MAX_TRUST_FILE_BYTES).get("folders")
    return dict(folders) if isinstance(folders, dict) else {}


def _tiller_decisions(env: Mapping[str, str]) -> dict[str, bool]:
    found: dict[str, bool] = {}
    for folder, entry in _read_record(trust_file(env)).items():
        if isinstance(entry, dict) and isinstance(entry.get("trusted"), bool):
            found[os.path.realpath(folder)] = entry["trusted"]
    return found


def _claude_decisions(env: Mapping[str, str]) -> dict[str, bool]:
    """Claude Code's yes per folder (it records only yes: a no is never kept there)."""
    projects = _read_json(claude_json_path(env), MAX_CLAUDE_JSON_BYTES).get("projects")
    if not isinstance(projects, dict):
        return {}
    return {
        os.path.realpath(folder): True
        for folder, entry in projects.items()
        if isinstance(folder, str)
        and os.path.isabs(folder)
        and isinstance(entry, dict)
        and entry.get("hasTrustDialogAccepted") is True
    }


def _read_json(path: Path, limit: int) -> JSON:
    """A JSON object file as it is now; {} when it is missing, too large or not JSON (trust is
    then simply not found there: the folder stays untrusted)."""
    found = read_settings_file("user", path, limit)
    return {} if found is None else found.data
