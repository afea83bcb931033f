"""``languageServers``: which language server checks the files the agent edits.

Sources, lowest precedence first (on a name clash the later entry wins whole): the settings
layer's files (``settings_layer.py``: user, workspace, local scopes), then
``initializationOptions.languageServers``. An entry::

    "pyright": {"command": ["pyright-langserver", "--stdio"], "extensions": [".py", ".pyi"],
                "languageId": "python", "timeoutSeconds": 20, "initializationOptions": {}}

``command`` and ``extensions`` are required; ``languageId`` defaults from the extension. An
entry names a command Tiller runs (the first edit of a matching file starts it), so an entry of
a file inside the workspace (``.claude/settings*.json``, ``.tiller/settings*.json``: a
``settings.local.json`` is the workspace's file like any other) is used only once the folder is
trusted and a settings file approves it, the one rule MCP's workspace servers follow
(``Settings.enabling``): ``enabledLanguageServers`` (names) or ``enableAllProjectLanguageServers``
in the user's own settings or, once the folder is trusted, in its own files (a trusted folder's
hooks run anyway). Else cloning a repository and asking for one edit would run its commands.
A bad or not enabled entry is a problem naming its file and entry; the others are still read.
Nothing configured: no language server, no diagnostics, no cost.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tiller.extend.settings_layer import Settings, Source
from tiller.jsontypes import JSON

KEY: Final = "languageServers"
ENABLE_ALL: Final = "enableAllProjectLanguageServers"
ENABLED: Final = "enabledLanguageServers"
ENTRY_KEYS: Final = frozenset(
    {"command", "extensions", "languageId", "timeoutSeconds", "initializationOptions"}
)
DEFAULT_TIMEOUT_SECONDS: Final = 20
MAX_TIMEOUT_SECONDS: Final = 600
_EXTENSION = re.compile(r"\.[A-Za-z0-9_+-]+")
LANGUAGE_IDS: Final = {
    ".py": "python", ".pyi": "python", ".ts": "typescript", ".mts": "typescript",
    ".cts": "typescript", ".tsx": "typescriptreact", ".js": "javascript", ".mjs": "javascript",
    ".cjs": "javascript", ".jsx": "javascriptreact", ".rs": "rust", ".go": "go", ".c": "c",
    ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".java": "java", ".rb": "ruby",
    ".cs": "csharp", ".lua": "lua", ".sh": "shellscript", ".json": "json", ".css": "css",
    ".html": "html", ".vue": "vue", ".svelte": "svelte", ".zig": "zig", ".swift": "swift",
    ".kt": "kotlin", ".php": "php",
}  # fmt: skip
"""LSP's language identifiers (the specification's table) for the common extensions."""


@dataclass(frozen=True)
class LanguageServerConfig:
    name: str
    command: tuple[str, ...]
    extensions: tuple[str, ...]  # lower case, with the dot
    source: str  # the file (or "initializationOptions") it came from
    language_id: str | None = None  # None: from the file's extension
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS  # for each diagnostics wait, start included
    initialization_options: JSON = field(default_factory=dict)

    def matches(self, path: Path) -> bool:
        return path.suffix.lower() in self.extensions

    def language_of(self, path: Path) -> str:
        suffix = path.suffix.lower()
        return self.language_id or LANGUAGE_IDS.get(suffix, suffix.removeprefix("."))


@dataclass(frozen=True)
class LanguageServersConfig:
    servers: tuple[LanguageServerConfig, ...] = ()
    problems: tuple[str, ...] = ()

    def server_for(self, path: Path) -> LanguageServerConfig | None:
        """The first server (in configuration order) that checks ``path``."""
        return next((s for s in self.servers if s.matches(path)), None)


def parse_entry(name: str, raw: Any, source: str) -> LanguageServerConfig:
    """One entry; ValueError says what is wrong with it."""
    if not isinstance(raw, dict):
        raise ValueError("expected an object with 'command' and 'extensions'")
    command = raw.get("command")
    if (
        not isinstance(command, list)
        or not command
        or not all(isinstance(part, str) and part for part in command)
    ):
        raise ValueError("'command' must be a non-empty list of strings (program and arguments)")
    extensions = raw.get("extensions")
    if (
        not isinstance(extensions, list)
        or not extensions
        or not all(isinstance(e, str) and _EXTENSION.fullmatch(e) for e in extensions)
    ):
        raise ValueError('\'extensions\' must be a non-empty list like [".ts", ".tsx"]')
    language_id = raw.get("languageId")
    if language_id is not None and (not isinstance(language_id, str) or not language_id):
        raise ValueError("'languageId' must be a non-empty string")
    timeout = raw.get("timeoutSeconds", DEFAULT_TIMEOUT_SECONDS)
    if isinstance(timeout, bool) or not isinstance(timeout, int):
        raise ValueError(f"'timeoutSeconds' must be an integer, got {timeout!r}")
    if not 1 <= timeout <= MAX_TIMEOUT_SECONDS:
        raise ValueError(f"'timeoutSeconds' must be 1 … {MAX_TIMEOUT_SECONDS}, got {timeout}")
    options = raw.get("initializationOptions", {})
    if not isinstance(options, dict):
        raise ValueError("'initializationOptions' must be an object")
    return LanguageServerConfig(
        name,
        tuple(command),
        tuple(e.lower() for e in extensions),
        source,
        language_id,
        timeout,
        options,
    )


@dataclass(frozen=True)
class Enabled:
    """Which of the workspace's entries the user enabled (in the user's own files only)."""

    all: bool = False
    names: frozenset[str] = frozenset()

    @classmethod
    def by(cls, settings: Settings) -> Enabled:
        enabling = [s.settings for s in settings.enabling()]
        return cls(
            any(f.enable_all_project_language_servers for f in enabling),
            frozenset(n for f in enabling for n in f.enabled_language_servers),
        )

    def allows(self, name: str) -> bool:
        return self.all or name in self.names


@dataclass
class _Reader:
    servers: dict[str, LanguageServerConfig] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def add(self, block: Any, source: str, refused: Callable[[str], str | None]) -> None:
        """``refused``: why an entry of this source may not be used (None: it may)."""
        if block is None:
            return
        if not isinstance(block, dict):
            self.problems.append(f"{source}: {KEY} must be an object of servers")
            return
        for name, raw in block.items():
            why = refused(name)
            if why is not None:
                self.problems.append(f"{source}: {KEY}.{name}: {why}")
                continue  # an entry of the user's own of that name stays
            try:
                self.servers[name] = parse_entry(name, raw, source)
                if unknown := sorted(str(k) for k in raw.keys() - ENTRY_KEYS):
                    self.problems.append(f"{source}: {KEY}.{name}: ignored {', '.join(unknown)}")
            except ValueError as err:
                self.problems.append(f"{source}: {KEY}.{name}: {err}")
                self.servers.pop(name, None)  # a broken override does not fall back silently


def read_language_servers(
    settings: Settings, client: Mapping[str, Any] | None
) -> LanguageServersConfig:
    """Every configured language server of the settings' workspace as its sources say now;
    ``client``: ``initializationOptions.languageServers``."""
    reader = _Reader()
    enabled = Enabled.by(settings)

    def refused_in(source: Source) -> Callable[[str], str | None]:
        def refused(name: str) -> str | None:
            if not source.in_workspace:
                return None
            if not source.trusted:
                return (
                    "not started: the folder is not trusted (trust it with /trust or "
                    f'`tiller trust`, then add "{ENABLED}": ["{name}"] to '
                    ".claude/settings.local.json)"
                )
            if not enabled.allows(name):
                return (
                    "not enabled: this file is part of the workspace, so its command runs only "
                    f'once you add "{ENABLED}": ["{name}"] (or "{ENABLE_ALL}": true) to '
                    ".claude/settings.local.json (this folder) or to your user settings"
                )
            return None

        return refused

    for source in settings.sources:
        reader.add(source.settings.language_servers or None, str(source.path), refused_in(source))
    reader.add(client, f"initializationOptions.{KEY}", lambda _name: None)
    return LanguageServersConfig(tuple(reader.servers.values()), tuple(reader.problems))
