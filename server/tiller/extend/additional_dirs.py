"""Claude Code's ``permissions.additionalDirectories``: folders beyond the workspace that the
agent may read and write like the workspace itself (each becomes a root, see
``workspace/roots.py``), from every settings file that may widen grants (``settings_layer``),
in order.

A path may be absolute, start with ``~``, or be relative to the workspace (the primary root).
A path that is not a directory is skipped, and the skip is told.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tiller.extend.settings_layer import Settings


@dataclass(frozen=True)
class AdditionalDirectories:
    found: tuple[Path, ...]
    problems: tuple[str, ...] = ()


def additional_directories(
    settings: Settings, env: Mapping[str, str] | None = None
) -> AdditionalDirectories:
    """The extra folders of the sources that may widen grants (an untrusted workspace's files
    may not: ``Settings.withheld`` says so)."""
    found: list[Path] = []
    problems: list[str] = []
    home = (os.environ if env is None else env).get("HOME") or str(Path.home())
    for source in settings.granting():
        for entry in source.settings.permissions.additional_directories:
            raw = home + entry[1:] if entry == "~" or entry.startswith("~/") else entry
            path = Path(os.path.abspath(settings.workspace / raw))
            if path.is_dir():
                found.append(path)
            else:
                problems.append(
                    f"{source.shown}: additional directory {entry} is not a directory: skipped"
                )
    return AdditionalDirectories(tuple(found), tuple(problems))
