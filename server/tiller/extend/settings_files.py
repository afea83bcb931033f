"""Where the settings files users already keep are (Claude Code's layout plus Tiller's own),
and how one is read as it is now.

- the user's: ``$CLAUDE_CONFIG_DIR`` (else ``~/.claude``) ``/settings.json``,
  ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json``) and ``$TILLER_CONFIG_DIR`` (else
  ``$XDG_CONFIG_HOME/tiller``, else ``~/.config/tiller``) ``/settings.json``;
- the workspace's: ``.claude/settings.json``, ``.tiller/settings.json`` and the
  ``settings.local.json`` beside each.

``settings_layer.py`` reads them all, with their scope and the folder's trust. A missing file is
no file; a file that is not a JSON object is a ``SettingsFile`` with a ``problem`` a notice can
show, and contributes nothing, so one broken file never hides the others.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tiller.jsontypes import JSON

Scope = Literal["user", "workspace", "local"]
SCOPES: tuple[Scope, ...] = ("user", "workspace", "local")
MAX_SETTINGS_BYTES = 1_048_576


@dataclass(frozen=True)
class SettingsFile:
    scope: Scope
    path: Path
    data: JSON  # {} when the file is broken
    problem: str | None = None  # why the file was not read, for a notice


def claude_user_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    configured = env.get("CLAUDE_CONFIG_DIR")
    return Path(configured) if configured else Path(env.get("HOME") or Path.home()) / ".claude"


def tiller_user_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if configured := env.get("TILLER_CONFIG_DIR"):
        return Path(configured)
    xdg = env.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg else Path(env.get("HOME") or Path.home()) / ".config"
    return base / "tiller"


def claude_json_path(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's own state file: ``$CLAUDE_CONFIG_DIR/.claude.json`` or ``~/.claude.json``
    (its user-scope MCP servers, its record of each folder: trust, enabled servers)."""
    env = os.environ if env is None else env
    if env.get("CLAUDE_CONFIG_DIR"):
        return claude_user_dir(env) / ".claude.json"
    return Path(env.get("HOME") or Path.home()) / ".claude.json"


def settings_paths(
    workspace: Path, env: Mapping[str, str] | None = None
) -> list[tuple[Scope, Path]]:
    """Every place a settings file may be, lowest precedence first."""
    return [
        ("user", claude_user_dir(env) / "settings.json"),
        ("user", tiller_user_dir(env) / "settings.json"),
        ("workspace", workspace / ".claude" / "settings.json"),
        ("workspace", workspace / ".tiller" / "settings.json"),
        ("local", workspace / ".claude" / "settings.local.json"),
        ("local", workspace / ".tiller" / "settings.local.json"),
    ]


def read_settings_file(
    scope: Scope, path: Path, limit: int = MAX_SETTINGS_BYTES
) -> SettingsFile | None:
    """One file as it is now; None when there is none."""
    try:
        with path.open("rb") as f:
            raw = f.read(limit + 1)
    except FileNotFoundError:
        return None
    except OSError as e:
        return SettingsFile(scope, path, {}, f"{path}: cannot be read ({e.strerror or e})")
    if len(raw) > limit:
        return SettingsFile(scope, path, {}, f"{path}: larger than {limit} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return SettingsFile(scope, path, {}, f"{path}: not UTF-8")
    except json.JSONDecodeError as e:
        return SettingsFile(scope, path, {}, f"{path}: not JSON ({e.msg} at line {e.lineno})")
    if not isinstance(data, dict):
        return SettingsFile(scope, path, {}, f"{path}: not a JSON object")
    return SettingsFile(scope, path, data)
