"""Claude Code's ``permissions.additionalDirectories``: folders beyond the workspace that the
agent may read and write like the workspace itself (each becomes a root, see
``workspace/roots.py``), from every settings file (``settings_files``), in order.

A path may be absolute, start with ``~``, or be relative to the workspace (the primary root).
A path that is not a directory is skipped, and the skip is told.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tiller.extend.settings_files import read_settings_files


@dataclass(frozen=True)
class AdditionalDirectories:
    found: tuple[Path, ...]
    problems: tuple[str, ...] = ()


def additional_directories(
    workspace: Path, env: Mapping[str, str] | None = None
) -> AdditionalDirectories:
    found: list[Path] = []
    problems: list[str] = []
    home = (os.environ if env is None else env).get("HOME") or str(Path.home())
    for settings in read_settings_files(workspace, env):
        permissions = settings.data.get("permissions")
        entries = (
            permissions.get("additionalDirectories") if isinstance(permissions, dict) else None
        )
        if entries is None:
            continue
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            problems.append(
                f"{settings.path}: permissions.additionalDirectories must be a list of paths"
            )
            continue
        for entry in entries:
            raw = home + entry[1:] if entry == "~" or entry.startswith("~/") else entry
            path = Path(os.path.abspath(workspace / raw))
            if path.is_dir():
                found.append(path)
            else:
                problems.append(
                    f"{settings.path}: additional directory {entry} is not a directory: skipped"
                )
    return AdditionalDirectories(tuple(found), tuple(problems))
