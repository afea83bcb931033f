"""The one settings layer: every settings file read once, with its scope and its trust, into one
typed value that every consumer reads (rules, hooks, MCP servers, language servers, extra
folders, environment). No consumer decides trust itself: each asks this value which sources
may grant.

Sources, lowest precedence first:

- ``user``: ``~/.claude/settings.json`` (``$CLAUDE_CONFIG_DIR``), ``~/.claude.json``'s
  ``mcpServers`` (Claude Code's user-scope MCP servers), Tiller's
  ``~/.config/tiller/settings.json`` (``$TILLER_CONFIG_DIR``);
- ``workspace``: ``.mcp.json``, ``.claude/settings.json``, ``.tiller/settings.json``;
- ``local``: Claude Code's record of the folder in ``~/.claude.json`` (``projects[path]``: its
  ``mcpServers`` and which ``.mcp.json`` servers the user enabled), then
  ``.claude/settings.local.json`` and ``.tiller/settings.local.json``.

A file inside the workspace is the workspace's, whatever its name says: git tracks a
``settings.local.json`` like any file. Until the user trusts the folder (``trust.py``), such a
file still narrows (deny and ask rules, ``disableAllHooks``), and its instruction text still
applies, but it runs nothing and widens nothing: its hooks, MCP and language servers, allow
rules, extra folders and environment are left out, and ``withheld`` says what was. A server a
workspace file names (MCP, language server) starts only when the folder is trusted *and* the
user approved it (``enabledMcpjsonServers`` …) in a source that may grant (``enabling``): one
rule for both kinds of server, as Claude Code has it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tiller.extend.settings_files import (
    MAX_SETTINGS_BYTES,
    Scope,
    claude_json_path,
    claude_user_dir,
    read_settings_file,
    tiller_user_dir,
)
from tiller.extend.settings_schema import (
    NO_SETTINGS,
    FileSettings,
    structure_file,
    turns_off,
    web_settings_of,
)
from tiller.extend.trust import Trust
from tiller.jsontypes import JSON

MCP_JSON: Final = ".mcp.json"
MAX_CLAUDE_JSON_BYTES: Final = 256 * 1_048_576  # Claude Code keeps every project's state there
PROJECT_KEYS: Final = (
    "mcpServers", "enabledMcpjsonServers", "disabledMcpjsonServers", "enableAllProjectMcpServers",
)  # fmt: skip


@dataclass(frozen=True)
class Source:
    """One settings file (or one part of Claude Code's ``~/.claude.json``) as read."""

    scope: Scope
    path: Path
    shown: str  # as users read it: relative to the workspace, or ~/... for home
    in_workspace: bool  # a stranger's file until the folder is trusted
    trusted: bool  # may run programs and widen grants
    settings: FileSettings = NO_SETTINGS
    unreadable: bool = False  # a settings file that could not be read: its rules are unknown

    @property
    def enables(self) -> bool:
        """Whether its approvals of the workspace's MCP and language servers count: the user's
        own files always, the workspace's once the folder is trusted (a trusted folder's files
        may run hooks already: an approval there grants nothing more)."""
        return self.trusted


@dataclass(frozen=True)
class Settings:
    """Every source of one workspace, read once, with the folder's trust."""

    workspace: Path
    trust: Trust
    sources: tuple[Source, ...] = ()
    problems: tuple[str, ...] = ()

    def granting(self) -> tuple[Source, ...]:
        """The sources that may run programs and widen grants."""
        return tuple(s for s in self.sources if s.trusted)

    def enabling(self) -> tuple[Source, ...]:
        """The sources whose approvals of the workspace's servers count (the one rule MCP and
        language servers share)."""
        return tuple(s for s in self.sources if s.enables)

    @property
    def hooks_disabled(self) -> bool:
        """Claude Code's ``disableAllHooks`` in any file: it only takes away, so any may say it."""
        return any(s.settings.disable_all_hooks for s in self.sources)

    def withheld(self) -> tuple[str, ...]:
        """What the untrusted workspace's files hold that was left out, one line per file."""
        lines = []
        for source in self.sources:
            if source.trusted:
                continue
            held = _grants_in(source.settings)
            if held:
                lines.append(f"{source.shown} ({', '.join(held)})")
        return tuple(lines)


def _grants_in(settings: FileSettings) -> list[str]:
    found = []
    if settings.hooks:
        found.append("hooks")
    if settings.permissions.allow:  # any allow entry, readable or not
        found.append("allow rules")
    if settings.permissions.additional_directories:
        found.append("additional directories")
    if settings.mcp_servers:
        found.append("MCP servers")
    if settings.language_servers:
        found.append("language servers")
    if settings.env:
        found.append("environment")
    if settings.sandbox:
        found.append("sandbox settings")
    found += [key for key, raw in web_settings_of(settings) if not turns_off(raw)]  # webSearch
    return found


def shown(path: Path, workspace: Path, env: Mapping[str, str] | None = None) -> str:
    """A settings file as users read it: relative to the workspace, or ~ for home."""
    try:
        return str(path.relative_to(workspace))
    except ValueError:
        home = (os.environ if env is None else env).get("HOME")
        if home and str(path).startswith(home.rstrip("/") + "/"):
            return "~/" + str(path)[len(home.rstrip("/")) + 1 :]
        return str(path)


def read_settings(workspace: Path, trust: Trust, env: Mapping[str, str] | None = None) -> Settings:
    """Every source of ``workspace`` as it is now (no cache: a file edited counts at once)."""
    env = os.environ if env is None else env
    sources: list[Source] = []
    problems: list[str] = []
    claude_json = claude_json_path(env)
    claude = _read_object(claude_json, MAX_CLAUDE_JSON_BYTES, str(claude_json), problems) or {}

    def add(
        scope: Scope, path: Path, data: JSON | None, *, tiller: bool = False, broken: bool = False
    ) -> None:
        if not data and not broken:
            return
        where = shown(path, workspace, env)
        settings, wrong, unknown = structure_file(data or {}, where)
        problems.extend(wrong)
        if tiller:  # Claude Code's files have keys Tiller has no use for: theirs to tell
            problems.extend(f"{where}: {key}: not a key Tiller knows: ignored" for key in unknown)
        in_workspace = _inside(path, workspace)
        trusted = trust.trusted or not in_workspace
        unreadable = broken or not isinstance((data or {}).get("permissions", {}), dict)
        sources.append(Source(scope, path, where, in_workspace, trusted, settings, unreadable))

    def settings_file(scope: Scope, path: Path, *, tiller: bool = False) -> None:
        """A file that may hold rules: one that cannot be read is kept as unreadable (its
        deny rules are unknown: the rule book fails closed)."""
        found = read_settings_file(scope, path, MAX_SETTINGS_BYTES)
        if found is not None and found.problem is not None:
            problems.append(found.problem.replace(str(path), shown(path, workspace, env), 1))
            add(scope, path, None, tiller=tiller, broken=True)
        elif found is not None:
            add(scope, path, found.data, tiller=tiller)

    def only(data: JSON | None, keys: tuple[str, ...]) -> JSON | None:
        return None if data is None else {k: data[k] for k in keys if k in data}

    claude_user, tiller_user = claude_user_dir(env), tiller_user_dir(env)
    dot_claude, dot_tiller = workspace / ".claude", workspace / ".tiller"
    mcp_json = _read_object(workspace / MCP_JSON, MAX_SETTINGS_BYTES, MCP_JSON, problems)
    settings_file("user", claude_user / "settings.json")
    add("user", claude_json, only(claude, ("mcpServers",)))  # Claude Code's user-scope servers
    settings_file("user", tiller_user / "settings.json", tiller=True)
    add("workspace", workspace / MCP_JSON, only(mcp_json, ("mcpServers",)))
    settings_file("workspace", dot_claude / "settings.json")
    settings_file("workspace", dot_tiller / "settings.json", tiller=True)
    # Claude Code's record of this folder: the user's own (it lies outside the workspace)
    add("local", claude_json, only(_project_entry(claude, workspace), PROJECT_KEYS))
    settings_file("local", dot_claude / "settings.local.json")
    settings_file("local", dot_tiller / "settings.local.json", tiller=True)
    return Settings(workspace, trust, tuple(sources), tuple(problems))


def _inside(path: Path, workspace: Path) -> bool:
    """Whether ``path`` lies in the workspace, by its name or where its links lead."""
    for candidate, root in ((path, workspace), (Path(os.path.realpath(path)),
                                               Path(os.path.realpath(workspace)))):  # fmt: skip
        try:
            candidate.relative_to(root)
        except ValueError:
            continue
        return True
    return False


def _read_object(path: Path, limit: int, where: str, problems: list[str]) -> JSON | None:
    """A JSON object file as it is now; None when missing or broken (a problem says why: one
    broken file never hides the others)."""
    found = read_settings_file("user", path, limit)
    if found is None:
        return None
    if found.problem is not None:
        problems.append(found.problem.replace(str(path), where, 1))
        return None
    return found.data


def _project_entry(claude: JSON, workspace: Path) -> JSON:
    """Claude Code's record of ``workspace`` in ``~/.claude.json`` (by path as given or real)."""
    projects = claude.get("projects")
    if not isinstance(projects, dict):
        return {}
    for key in (str(workspace), os.path.realpath(workspace)):
        entry = projects.get(key)
        if isinstance(entry, dict):
            return entry
    return {}
