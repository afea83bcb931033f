"""Where MCP servers come from, read as their owners write them.

Sources, lowest precedence first (on a name clash the later source's server wins whole): the
settings layer's sources (``settings_layer.py``: ``~/.claude.json``'s ``mcpServers``, Tiller's
user settings, ``.mcp.json``, ``.claude|.tiller/settings.json``, Claude Code's record of the
folder in ``~/.claude.json``, the ``settings.local.json`` files), then
``initializationOptions.mcpServers`` (the client's settings), then the servers an ACP client
passes in ``session/new`` / ``session/load``.

A server entry is Claude Code's: ``{type?: "stdio"|"http"|"sse", command, args, env, url,
headers, cwd}``; ``${VAR}`` and ``${VAR:-default}`` are expanded in command, args, env, url and
headers. Keys other tools write are read too: ``timeout`` (milliseconds for each call, as
Gemini CLI reads it) and ``disabled: true`` (the server is listed, never started); any other
key (Cline's ``autoApprove``: a grant Tiller never takes from a file) is a notice, and the entry
is kept.

A server named in a file inside the workspace (``.mcp.json``, ``.claude|.tiller/settings*.json``)
can run any command, so it starts only when the folder is trusted *and* the user approved it,
as Claude Code asks: ``enableAllProjectMcpServers`` or ``enabledMcpjsonServers`` in any
settings file that may grant (the settings layer's ``enabling``: the user's own, Claude Code's
record of the folder, and the workspace's once the folder is trusted, ``.claude/
settings.local.json`` included), or in ``initializationOptions``; ``disabledMcpjsonServers`` in
any file wins. A server held back says why and which file and key to edit (``held``: the
session-start notice tells of each). A bad entry is a problem naming its file and server; the
others are still read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from tiller.extend.settings_files import claude_user_dir
from tiller.extend.settings_layer import Settings, shown
from tiller.extend.settings_schema import FileSettings
from tiller.jsontypes import JSON

Scope = Literal["user", "workspace", "local", "client", "session"]
Held = Literal["untrusted", "not approved", "disabled"]
"""Why a configured server does not start: its folder is not trusted, the user has not approved
the workspace's server, or it is disabled (``disabled: true``, ``disabledMcpjsonServers``)."""
TRUSTED_SCOPES: frozenset[Scope] = frozenset({"user", "local", "client", "session"})
SERVER_KEYS = frozenset({"type", "command", "args", "env", "url", "headers", "cwd"})
OTHER_TOOLS_KEYS = frozenset({"timeout", "disabled"})  # Gemini CLI's, Cline's: honoured
MAX_TIMEOUT_MS = 86_400_000
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NAME = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class Stdio:
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)  # only what the config names
    cwd: str | None = None


@dataclass(frozen=True)
class Http:
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    kind: Literal["http", "sse"] = "http"


Launch = Stdio | Http


@dataclass(frozen=True)
class ServerConfig:
    name: str  # as configured
    launch: Launch
    source: str  # the file (or "initializationOptions", "ACP session") it came from
    scope: Scope
    blocked: str | None = None  # why it must not start, and what to do about it
    call_seconds: float | None = None  # the entry's ``timeout``; None: the setting's
    held: Held | None = None  # the kind of ``blocked``

    @property
    def notice(self) -> str | None:
        """What the user is told when a session opens: a server held back until the user acts
        (None: it may start, or the user disabled it)."""
        if self.held in ("untrusted", "not approved"):
            return f"server {self.name!r} of {self.source} is not started: {self.blocked}"
        return None

    @property
    def transport(self) -> str:
        return "stdio" if isinstance(self.launch, Stdio) else self.launch.kind


@dataclass(frozen=True)
class McpConfig:
    servers: Mapping[str, ServerConfig]
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Enablement:
    """Which workspace servers the user enabled (Claude Code's settings names)."""

    all: bool = False
    names: frozenset[str] = frozenset()
    disabled: frozenset[str] = frozenset()

    def add(self, data: Mapping[str, Any] | FileSettings) -> Enablement:
        """What ``data`` (a settings file's, or ``initializationOptions``) enables and
        disables."""
        if isinstance(data, FileSettings):
            all_, names, disabled = (
                data.enable_all_project_mcp_servers,
                frozenset(data.enabled_mcpjson_servers),
                frozenset(data.disabled_mcpjson_servers),
            )
        else:
            all_ = data.get("enableAllProjectMcpServers") is True
            names = _names(data.get("enabledMcpjsonServers"))
            disabled = _names(data.get("disabledMcpjsonServers"))
        return Enablement(self.all or all_, self.names | names, self.disabled | disabled)

    def disabling(self, data: FileSettings) -> Enablement:
        """What ``data`` disables (any file may: it only takes away)."""
        return replace(self, disabled=self.disabled | frozenset(data.disabled_mcpjson_servers))

    def allows(self, name: str) -> bool:
        return name not in self.disabled and (self.all or name in self.names)


def _names(value: Any) -> frozenset[str]:
    if not isinstance(value, list):
        return frozenset()
    return frozenset(v for v in value if isinstance(v, str))


def expand(text: str, env: Mapping[str, str], missing: list[str]) -> str:
    """``${VAR}`` and ``${VAR:-default}`` as Claude Code expands them; names without a value
    and without a default are added to ``missing``."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = env.get(name)
        if value is not None:
            return value
        if default is not None:
            return default
        missing.append(name)
        return ""

    return _VARIABLE.sub(one, text)


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what} must be a list of strings")
    return tuple(value)


def _string_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"{what} must be an object of strings")
    return dict(value)


@dataclass(frozen=True)
class Parsed:
    """One entry as read: how to start it, its call timeout, whether it is disabled, and the
    keys it has that Tiller ignores (for a notice)."""

    launch: Launch
    call_seconds: float | None = None
    disabled: bool = False
    ignored: tuple[str, ...] = ()


def parse_server(raw: Any, env: Mapping[str, str]) -> Parsed:
    """One server entry; ValueError says what is wrong with it."""
    if not isinstance(raw, dict):
        raise ValueError("expected an object with 'command' or 'url'")
    ignored = tuple(sorted(str(k) for k in raw.keys() - SERVER_KEYS - OTHER_TOOLS_KEYS))
    timeout = raw.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout <= MAX_TIMEOUT_MS
    ):
        raise ValueError(f"'timeout' must be milliseconds, 1 … {MAX_TIMEOUT_MS}")
    disabled = raw.get("disabled", False)
    if not isinstance(disabled, bool):
        raise ValueError("'disabled' must be true or false")
    call_seconds = None if timeout is None else timeout / 1000
    return Parsed(_launch(raw, env), call_seconds, disabled, ignored)


def _launch(raw: JSON, env: Mapping[str, str]) -> Launch:
    kind = raw.get("type")
    if kind is None:
        kind = "http" if "url" in raw and "command" not in raw else "stdio"
    missing: list[str] = []
    launch: Launch
    match kind:
        case "stdio":
            command = raw.get("command")
            if not isinstance(command, str) or not command.strip():
                raise ValueError("a stdio server needs a 'command' (string)")
            cwd = raw.get("cwd")
            if cwd is not None and not isinstance(cwd, str):
                raise ValueError("'cwd' must be a string")
            launch = Stdio(
                expand(command, env, missing),
                tuple(expand(a, env, missing) for a in _strings(raw.get("args"), "'args'")),
                {
                    k: expand(v, env, missing)
                    for k, v in _string_map(raw.get("env"), "'env'").items()
                },
                None if cwd is None else expand(cwd, env, missing),
            )
        case "http" | "sse":
            url = raw.get("url")
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise ValueError(f"a {kind} server needs a 'url' (http:// or https://)")
            headers = _string_map(raw.get("headers"), "'headers'")
            launch = Http(
                expand(url, env, missing),
                {k: expand(v, env, missing) for k, v in headers.items()},
                kind,
            )
        case other:
            raise ValueError(f"'type' must be 'stdio', 'http' or 'sse', got {other!r}")
    if missing:
        raise ValueError(f"missing environment variables: {', '.join(sorted(set(missing)))}")
    return launch


@dataclass
class _Reader:
    env: Mapping[str, str]
    servers: dict[str, ServerConfig] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def add(self, block: Any, source: str, scope: Scope, untrusted: bool = False) -> None:
        """The ``mcpServers`` object of one source; a later server replaces an earlier one.
        ``untrusted``: this source's servers must not start (an untrusted folder's)."""
        if block is None:
            return
        if not isinstance(block, dict):
            self.problems.append(f"{source}: mcpServers must be an object of servers")
            return
        for name, raw in block.items():
            if not isinstance(name, str) or not name.strip():
                self.problems.append(f"{source}: a server name must be a non-empty string")
                continue
            try:
                parsed = parse_server(raw, self.env)
            except ValueError as err:
                self.problems.append(f"{source}: MCP server {name!r}: {err}")
                continue
            if parsed.ignored:
                keys = ", ".join(parsed.ignored)
                self.problems.append(f"{source}: MCP server {name!r}: ignored {keys}")
            held: Held | None = (
                "disabled" if parsed.disabled else "untrusted" if untrusted else None
            )
            why = "disabled in its configuration (disabled: true)" if parsed.disabled else None
            self.servers[name] = ServerConfig(
                name, parsed.launch, source, scope, why, parsed.call_seconds, held
            )


LOCAL_SETTINGS: Final = ".claude/settings.local.json"
"""Where the user approves a workspace's servers for that folder only (Claude Code writes its
approvals there; Tiller reads it, and git ignores it where Claude Code set that up)."""
APPROVE = 'add "enabledMcpjsonServers": ["{name}"] to {local}'
UNTRUSTED = (
    "the folder is not trusted: a server named in the workspace's files starts only once you "
    "trust the folder (/trust yes, `tiller trust`, or the editor's workspace trust) and approve "
    "it: " + APPROVE
)
NOT_APPROVED = (
    "not enabled: a server named in the workspace's files starts only once you approve it: "
    + APPROVE
    + ' (this folder only; "enableAllProjectMcpServers": true approves all of its servers; '
    "{user} takes either key for every folder), then start Tiller again"
)
DISABLED = "disabled by disabledMcpjsonServers in your settings"


def read_mcp_config(
    settings: Settings,
    client: Mapping[str, Any] | None = None,
    session: Mapping[str, Any] | None = None,
    enable: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> McpConfig:
    """Every configured server of the settings' workspace as its sources say now (see the
    module doc).

    ``client``: ``initializationOptions.mcpServers``; ``session``: what an ACP client passed
    (already in this shape); ``enable``: ``initializationOptions`` keys that enable workspace
    servers."""
    env = os.environ if env is None else env
    reader = _Reader(env)
    enabled = Enablement().add(enable or {})
    for source in settings.sources:
        enabled = enabled.add(source.settings) if source.enables else enabled
        enabled = enabled.disabling(source.settings)
    for source in settings.sources:
        block = source.settings.mcp_servers or None
        where = str(source.path)
        if source.path.name == ".claude.json" and source.scope == "local":
            where = f"{source.path} (projects.{settings.workspace})"
        scope: Scope = "workspace" if source.in_workspace else source.scope
        reader.add(block, where, scope, untrusted=not source.trusted)
    reader.add(client, "initializationOptions.mcpServers", "client")
    reader.add(session, "ACP session", "session")
    user = shown(claude_user_dir(env) / "settings.json", settings.workspace, env)
    servers = {name: _blocked(server, enabled, user) for name, server in reader.servers.items()}
    return McpConfig(servers, tuple(reader.problems))


def session_config(servers: Mapping[str, Any], env: Mapping[str, str] | None = None) -> McpConfig:
    """The servers an ACP client passed, in the shape above (``acp_servers``)."""
    reader = _Reader(os.environ if env is None else env)
    reader.add(dict(servers), "ACP session", "session")
    return McpConfig(dict(reader.servers), tuple(reader.problems))


def _blocked(server: ServerConfig, enabled: Enablement, user: str) -> ServerConfig:
    """``server`` with why it may not start, if it may not: disabled, in an untrusted folder,
    or the workspace's and not approved (the one rule; the user's own servers need no yes)."""
    texts = {"name": server.name, "local": LOCAL_SETTINGS, "user": user}
    match server.held:
        case "disabled":
            return server
        case "untrusted":
            return replace(server, blocked=UNTRUSTED.format(**texts))
        case _ if server.scope in TRUSTED_SCOPES:
            return server
        case _ if server.name in enabled.disabled:
            return replace(server, blocked=DISABLED, held="disabled")
        case _ if enabled.allows(server.name):
            return server
        case _:
            return replace(server, blocked=NOT_APPROVED.format(**texts), held="not approved")


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>`` with what the API refuses in a tool name made ``_`` and the
    whole cut to the API's 64 characters (as Claude Code names them)."""
    return f"mcp__{_NAME.sub('_', server)}__{_NAME.sub('_', tool)}"[:64]


def acp_servers(servers: Iterable[Any]) -> dict[str, JSON]:
    """ACP ``McpServer`` values (``{name, command, args, env: [{name, value}]}`` for stdio;
    ``{type: "http"|"sse", name, url, headers: [{name, value}]}``) in the shape above."""
    out: dict[str, JSON] = {}
    for server in servers:
        if not isinstance(server, dict) or not isinstance(server.get("name"), str):
            continue
        pairs = server.get("headers") if "url" in server else server.get("env")
        values = {
            p["name"]: p["value"]
            for p in pairs or []
            if isinstance(p, dict) and isinstance(p.get("name"), str)
        }
        if "url" in server:
            kind = server.get("type") or "http"
            out[server["name"]] = {"type": kind, "url": server["url"], "headers": values}
        else:
            out[server["name"]] = {
                "type": "stdio", "command": server.get("command"),
                "args": server.get("args") or [], "env": values,
            }  # fmt: skip
    return out
