"""Where MCP servers come from, read as their owners write them.

Sources, lowest precedence first (on a name clash the later source's server wins whole):

1. ``~/.claude.json`` ``mcpServers`` (Claude Code's user scope; ``$CLAUDE_CONFIG_DIR/.claude.json``
   when that is set);
2. Tiller's user settings (``~/.config/tiller/settings.json`` ...) ``mcpServers``;
3. ``.mcp.json`` at the workspace root (Claude Code's project scope);
4. ``.tiller/settings.json`` ``mcpServers`` (workspace);
5. ``~/.claude.json`` ``projects[<workspace>].mcpServers`` (Claude Code's local scope);
6. ``.tiller/settings.local.json`` ``mcpServers`` (local);
7. ``initializationOptions.mcpServers`` (the client's settings);
8. the servers an ACP client passes in ``session/new`` / ``session/load``.

A server entry is Claude Code's: ``{type?: "stdio"|"http"|"sse", command, args, env, url,
headers}``; ``${VAR}`` and ``${VAR:-default}`` are expanded in command, args, env, url and
headers. A file checked into the workspace (3, 4) can name any command, so its servers start
only once the user enabled them, as Claude Code asks: ``enableAllProjectMcpServers`` or
``enabledMcpjsonServers`` in a user-level settings file, in ``~/.claude.json``'s entry for the
workspace (where Claude Code records the user's yes), or in ``initializationOptions``.

A bad entry is a problem naming its file and server; the others are still read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tiller.extend.settings_files import Scope as SettingsScope
from tiller.extend.settings_files import claude_user_dir, read_settings_file, tiller_user_dir
from tiller.jsontypes import JSON

Scope = Literal["user", "workspace", "local", "client", "session"]
TRUSTED_SCOPES: frozenset[Scope] = frozenset({"user", "local", "client", "session"})
MAX_CONFIG_BYTES = 4 * 1_048_576
SERVER_KEYS = frozenset({"type", "command", "args", "env", "url", "headers", "cwd"})
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
    blocked: str | None = None  # why it must not start (a workspace server not enabled)

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

    def add(self, data: Mapping[str, Any]) -> Enablement:
        names, disabled = (
            _names(data.get("enabledMcpjsonServers")),
            _names(data.get("disabledMcpjsonServers")),
        )
        return Enablement(
            self.all or data.get("enableAllProjectMcpServers") is True,
            self.names | names,
            self.disabled | disabled,
        )

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


def parse_server(raw: Any, env: Mapping[str, str]) -> Launch:
    """One server entry; ValueError says what is wrong with it."""
    if not isinstance(raw, dict):
        raise ValueError("expected an object with 'command' or 'url'")
    unknown = sorted(raw.keys() - SERVER_KEYS)
    if unknown:
        raise ValueError(f"unknown keys {unknown}")
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

    def add(self, block: Any, source: str, scope: Scope) -> None:
        """The ``mcpServers`` object of one source; a later server replaces an earlier one."""
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
                launch = parse_server(raw, self.env)
            except ValueError as err:
                self.problems.append(f"{source}: MCP server {name!r}: {err}")
                continue
            self.servers[name] = ServerConfig(name, launch, source, scope)


def _read_json(path: Path) -> tuple[JSON | None, str | None]:
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"{path}: cannot be read ({e.strerror or e})"
    if len(raw) > MAX_CONFIG_BYTES:
        return None, f"{path}: larger than {MAX_CONFIG_BYTES} bytes"
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return None, f"{path}: not JSON ({e})"
    if not isinstance(data, dict):
        return None, f"{path}: not a JSON object"
    return data, None


def claude_json_path(env: Mapping[str, str]) -> Path:
    """Claude Code's own state file: ``$CLAUDE_CONFIG_DIR/.claude.json`` or ``~/.claude.json``."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return claude_user_dir(env) / ".claude.json"
    return Path(env.get("HOME") or Path.home()) / ".claude.json"


def read_mcp_config(
    workspace: Path,
    client: Mapping[str, Any] | None = None,
    session: Mapping[str, Any] | None = None,
    enable: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> McpConfig:
    """Every configured server of ``workspace`` as its sources say now (see the module doc).

    ``client``: ``initializationOptions.mcpServers``; ``session``: what an ACP client passed
    (already in this shape); ``enable``: ``initializationOptions`` keys that enable workspace
    servers."""
    env = os.environ if env is None else env
    reader = _Reader(env)
    enabled = Enablement().add(enable or {})
    claude, problem = _read_json(claude_json_path(env))
    if problem:
        reader.problems.append(problem)
    claude = claude or {}
    project = _project_entry(claude, workspace)
    enabled = enabled.add(project)
    source = str(claude_json_path(env))
    reader.add(claude.get("mcpServers"), source, "user")
    tiller_files: list[tuple[SettingsScope, Path]] = [
        ("user", tiller_user_dir(env) / "settings.json"),
        ("workspace", workspace / ".tiller" / "settings.json"),
        ("local", workspace / ".tiller" / "settings.local.json"),
    ]
    for path in (claude_user_dir(env) / "settings.json", tiller_files[0][1]):
        found = read_settings_file("user", path)
        if found is not None:
            enabled = enabled.add(found.data)
    files = {scope: read_settings_file(scope, path) for scope, path in tiller_files}
    for scope, path in tiller_files:
        found = files[scope]
        if found is None:
            continue
        if found.problem:
            reader.problems.append(found.problem)
        if scope == "user":
            reader.add(found.data.get("mcpServers"), str(path), "user")
    mcp_json, problem = _read_json(workspace / ".mcp.json")
    if problem:
        reader.problems.append(problem)
    if mcp_json is not None:
        reader.add(mcp_json.get("mcpServers"), str(workspace / ".mcp.json"), "workspace")
    for scope, path in tiller_files[1:]:
        found = files[scope]
        if scope == "local":
            reader.add(project.get("mcpServers"), f"{source} (projects.{workspace})", "local")
        if found is not None:
            reader.add(found.data.get("mcpServers"), str(path), scope)
    reader.add(client, "initializationOptions.mcpServers", "client")
    reader.add(session, "ACP session", "session")
    servers = {
        name: _blocked(server, enabled) for name, server in reader.servers.items()
    }  # fmt: skip
    return McpConfig(servers, tuple(reader.problems))


def session_config(servers: Mapping[str, Any], env: Mapping[str, str] | None = None) -> McpConfig:
    """The servers an ACP client passed, in the shape above (``acp_servers``)."""
    reader = _Reader(os.environ if env is None else env)
    reader.add(dict(servers), "ACP session", "session")
    return McpConfig(dict(reader.servers), tuple(reader.problems))


def _project_entry(claude: JSON, workspace: Path) -> JSON:
    projects = claude.get("projects")
    if not isinstance(projects, dict):
        return {}
    for key in (str(workspace), str(workspace.resolve())):
        entry = projects.get(key)
        if isinstance(entry, dict):
            return entry
    return {}


def _blocked(server: ServerConfig, enabled: Enablement) -> ServerConfig:
    if server.scope in TRUSTED_SCOPES or enabled.allows(server.name):
        return server
    why = (
        f"not enabled: {server.source} is part of the workspace; enable it with "
        f'"enabledMcpjsonServers": ["{server.name}"] (or "enableAllProjectMcpServers": true) '
        "in your user settings or Tiller's initializationOptions"
    )
    return ServerConfig(server.name, server.launch, server.source, server.scope, why)


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
