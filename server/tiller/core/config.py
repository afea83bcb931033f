"""``initializationOptions``: validated at the edge into one frozen value."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import platformdirs

from tiller.core.hooks.config import NO_HOOKS, HookConfig, parse_hooks
from tiller.errors import ConfigError
from tiller.extend.trust import Trust
from tiller.model.models import EFFORT_LEVELS, as_effort, effort_problem, resolve, thinking_problem
from tiller.model.server_tools import (
    ServerTools,
    WebSettingError,
    WebToolSettings,
    parse_web_tool,
)
from tiller.model.usage import CACHE_TTLS, CacheTtl
from tiller.protocol import MODES, Mode, Thinking
from tiller.workspace.sandbox import SANDBOX_SETTINGS, SandboxSetting

log = logging.getLogger(__name__)

_ENV_PATTERN = re.compile(r"!?[A-Za-z0-9_*?]+")

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_MAX_TOOL_INPUT_BYTES = 1_048_576
DEFAULT_STREAM_IDLE_SECONDS = 60
DEFAULT_MCP_CALL_SECONDS = 120
DEFAULT_MCP_START_SECONDS = 30
_TOOL_PATTERN = re.compile(r"[A-Za-z0-9_*?\-]+")


@dataclass(frozen=True)
class AnthropicSettings:
    kind: Literal["anthropic"] = "anthropic"
    base_url: str | None = None
    api_key: str | None = None


@dataclass(frozen=True)
class ScriptedSettings:
    script: str
    kind: Literal["scripted"] = "scripted"


ProviderSettings = AnthropicSettings | ScriptedSettings


@dataclass(frozen=True)
class McpOptions:
    """The MCP keys of ``initializationOptions`` (see extend/mcp and docs/protocol.md)."""

    servers: Mapping[str, Any] = field(default_factory=dict)  # mcpServers, Claude Code's shape
    allow: tuple[str, ...] = ()  # mcpAllow: tool name patterns that run without asking
    read_only: tuple[str, ...] = ()  # mcpReadOnly: ... that only read (allowed in plan mode)
    call_seconds: int = DEFAULT_MCP_CALL_SECONDS
    start_seconds: int = DEFAULT_MCP_START_SECONDS
    enable: Mapping[str, Any] = field(default_factory=dict)  # enabledMcpjsonServers, ...


@dataclass(frozen=True)
class Config:
    model: str
    permission_mode: Mode = "default"
    thinking: Thinking = Thinking()
    max_tokens: int | None = None  # None: the model's max output (models.effective_max_tokens)
    tool_budget: int = 20
    checkpoint_timeout_seconds: int = 900
    stop_hook: str | None = None
    provider: ProviderSettings = AnthropicSettings()
    data_dir: Path | None = None
    max_tool_input_bytes: int = DEFAULT_MAX_TOOL_INPUT_BYTES
    stream_idle_seconds: int = DEFAULT_STREAM_IDLE_SECONDS
    sandbox: SandboxSetting = "auto"
    scrub_env: tuple[str, ...] = ()  # names/``*`` patterns to hide from tools; ``!NAME`` allows
    checkpoint_retention_days: int = 30
    cache_ttl: CacheTtl = "5m"  # prompt-cache entries' life: 1h costs more to write (models.py)
    server_tools: ServerTools = ServerTools()  # webSearch / webFetch, off by default
    hooks: HookConfig = NO_HOOKS  # ``hooks`` in Claude Code's shape (settings files add theirs)
    max_parallel_tasks: int = 3  # subagents of one session running at the same time
    step_retry_delays: tuple[float, ...] = (1.0, 2.0)  # not a setting: tests run without waits
    mcp: McpOptions = McpOptions()
    language_servers: Mapping[str, Any] = field(default_factory=dict)  # languageServers (raw)
    workspace_trust: Trust | None = None  # what the client decided (None: the user's record)

    @property
    def resolved_data_dir(self) -> Path:
        if self.data_dir is not None:
            return self.data_dir
        env = os.environ.get("TILLER_DATA_DIR")
        return Path(env) if env else Path(platformdirs.user_data_dir("tiller", appauthor=False))


KNOWN_KEYS = frozenset(
    {
        "model", "permissionMode", "thinking", "maxTokens", "toolBudget",
        "checkpointTimeoutSeconds", "stopHook", "provider", "dataDir",
        "maxToolInputBytes", "streamIdleSeconds", "sandbox", "scrubEnv",
        "checkpointRetentionDays", "cacheTtl", "webSearch", "webFetch", "maxParallelTasks",
        "mcpServers", "mcpAllow", "mcpReadOnly", "mcpCallSeconds", "mcpStartSeconds",
        "enableAllProjectMcpServers", "enabledMcpjsonServers", "disabledMcpjsonServers",
        "hooks", "languageServers", "workspaceTrust",
    }
)  # fmt: skip


# Upper bounds: a value past them is a mistake (and 2**70 must not reach an int64 API field).
MAXIMUMS: dict[str, int] = {
    "maxTokens": 1_000_000,
    "toolBudget": 100_000,
    "checkpointTimeoutSeconds": 7 * 86_400,
    "maxToolInputBytes": 64 * 1024 * 1024,
    "streamIdleSeconds": 3_600,
    "checkpointRetentionDays": 36_500,
    "maxParallelTasks": 16,
    "mcpCallSeconds": 86_400,
    "mcpStartSeconds": 3_600,
}


def _int(options: dict[str, Any], key: str, default: int, *, minimum: int) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(key, f"expected an integer, got {value!r}")
    if value < minimum:
        raise ConfigError(key, f"must be at least {minimum}, got {value}")
    maximum = MAXIMUMS.get(key)
    if maximum is not None and value > maximum:
        raise ConfigError(key, f"must be at most {maximum}, got {value}")
    return value


def _str(options: dict[str, Any], key: str) -> str | None:
    value = options.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ConfigError(key, f"expected a non-empty string, got {value!r}")
    return value


def parse_thinking(value: Any, key: str = "thinking", base: Thinking | None = None) -> Thinking:
    """``{enabled, effort?, budgetTokens?}``; fields left out keep ``base``'s values."""
    base = base or Thinking()
    if value is None:
        return base
    if not isinstance(value, dict) or not isinstance(value.get("enabled"), bool):
        raise ConfigError(key, "expected {enabled: bool, effort?: string, budgetTokens?: int}")
    effort = value.get("effort", base.effort)
    if effort is not None and as_effort(effort) is None:
        raise ConfigError(
            f"{key}.effort", f"expected one of {', '.join(EFFORT_LEVELS)}, got {effort!r}"
        )
    budget = value.get("budgetTokens", base.budget_tokens)
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)):
        raise ConfigError(f"{key}.budgetTokens", f"expected an integer, got {budget!r}")
    if budget is not None and budget < 1024:
        raise ConfigError(f"{key}.budgetTokens", f"must be at least 1024, got {budget}")
    return Thinking(value["enabled"], budget, as_effort(effort))


def _cache_ttl(value: Any) -> CacheTtl:
    for ttl in CACHE_TTLS:
        if value == ttl:
            return ttl
    raise ConfigError("cacheTtl", f"expected one of {', '.join(CACHE_TTLS)}, got {value!r}")


def _sandbox(value: Any) -> SandboxSetting:
    for setting in SANDBOX_SETTINGS:
        if value == setting:
            return setting
    raise ConfigError("sandbox", f"expected one of {', '.join(SANDBOX_SETTINGS)}, got {value!r}")


def _scrub_env(value: Any) -> tuple[str, ...]:
    """Variable names or ``*``/``?`` patterns; ``!NAME`` lets a name through the defaults."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError("scrubEnv", f"expected a list of variable names, got {value!r}")
    for entry in value:
        if not isinstance(entry, str) or not _ENV_PATTERN.fullmatch(entry):
            raise ConfigError(
                "scrubEnv", f"expected names like FOO, FOO_*, or !FOO to allow one, got {entry!r}"
            )
    return tuple(value)


def _web_tool(value: Any, key: str) -> WebToolSettings:
    """``{enabled, allowedDomains?, blockedDomains?, maxUses?, allowInPlanMode?}``
    (``server_tools.parse_web_tool``; the settings files say the same, ``extend/web_settings``)."""
    try:
        return parse_web_tool(value, key)
    except WebSettingError as err:
        raise ConfigError(err.key, err.detail) from err


def _tool_patterns(value: Any, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(v, str) and _TOOL_PATTERN.fullmatch(v) for v in value
    ):
        raise ConfigError(
            key, f"expected a list of tool names or patterns (mcp__time__*), got {value!r}"
        )
    return tuple(value)


def _mcp(options: dict[str, Any]) -> McpOptions:
    """The MCP keys; each server entry is checked when the servers are read, so one bad entry
    is a notice naming it and the others still work."""
    servers = options.get("mcpServers") or {}
    if not isinstance(servers, dict):
        raise ConfigError("mcpServers", "expected an object of servers ({name: {command, ...}})")
    enable: dict[str, Any] = {
        key: options[key]
        for key in ("enableAllProjectMcpServers", "enabledMcpjsonServers", "disabledMcpjsonServers")
        if key in options
    }
    if not isinstance(enable.get("enableAllProjectMcpServers", False), bool):
        raise ConfigError("enableAllProjectMcpServers", "expected a bool")
    for key in ("enabledMcpjsonServers", "disabledMcpjsonServers"):
        names = enable.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ConfigError(key, "expected a list of server names")
    return McpOptions(
        servers=servers,
        allow=_tool_patterns(options.get("mcpAllow"), "mcpAllow"),
        read_only=_tool_patterns(options.get("mcpReadOnly"), "mcpReadOnly"),
        call_seconds=_int(options, "mcpCallSeconds", DEFAULT_MCP_CALL_SECONDS, minimum=1),
        start_seconds=_int(options, "mcpStartSeconds", DEFAULT_MCP_START_SECONDS, minimum=1),
        enable=enable,
    )


def _language_servers(value: Any) -> Mapping[str, Any]:
    """``languageServers``; each entry is checked when the servers are read (extend/
    language_servers/config.py), so one bad entry is a notice naming it."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(
            "languageServers", "expected an object of servers ({name: {command, extensions}})"
        )
    return value


def _provider(value: Any) -> ProviderSettings:
    if value is None:
        return AnthropicSettings()
    if not isinstance(value, dict):
        raise ConfigError("provider", "expected an object with a 'kind'")
    match value.get("kind"):
        case "anthropic":
            base_url, api_key = value.get("baseUrl"), value.get("apiKey")
            for name, item in (("baseUrl", base_url), ("apiKey", api_key)):
                if item is not None and not isinstance(item, str):
                    raise ConfigError(f"provider.{name}", "expected a string")
            return AnthropicSettings(base_url=base_url, api_key=api_key)
        case "scripted":
            script = value.get("script")
            if not isinstance(script, str) or not script:
                raise ConfigError("provider.script", "expected a path to a JSON script or 'demo'")
            if script != "demo" and not Path(script).is_file():
                raise ConfigError("provider.script", f"no such file: {script}")
            return ScriptedSettings(script)
        case other:
            raise ConfigError("provider.kind", f"expected 'anthropic' or 'scripted', got {other!r}")


def _hooks(value: Any) -> HookConfig:
    """``hooks`` as Claude Code's settings write them; any wrong entry is an error here."""
    config, problems = parse_hooks(value, "initializationOptions")
    if problems:
        raise ConfigError(
            "hooks", "; ".join(p.removeprefix("initializationOptions: ") for p in problems)
        )
    return config


def _workspace_trust(value: Any) -> Trust | None:
    """``{trusted: bool, by?: string}``: the client's own decision for its workspace (VS
    Code's workspace trust, ``tiller run --trust``); left out, the user's record decides."""
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("trusted"), bool):
        raise ConfigError("workspaceTrust", "expected {trusted: bool, by?: string}")
    by = value.get("by", "the client")
    if not isinstance(by, str) or not by.strip():
        raise ConfigError("workspaceTrust.by", "expected a non-empty string")
    return Trust(value["trusted"], by)


def parse_config(options: Any) -> Config:
    """Validate ``initializationOptions``; unknown keys are ignored with a warning."""
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise ConfigError("(root)", "initializationOptions must be an object")
    for key in options.keys() - KNOWN_KEYS:
        log.warning("ignoring unknown initializationOptions key %r", key)
    mode = options.get("permissionMode", "default")
    if mode not in MODES:
        raise ConfigError("permissionMode", f"expected one of {', '.join(MODES)}, got {mode!r}")
    data_dir = _str(options, "dataDir")
    model = _str(options, "model") or os.environ.get("TILLER_MODEL") or DEFAULT_MODEL
    spec = resolve(model)
    max_tokens = (
        None if options.get("maxTokens") is None else _int(options, "maxTokens", 0, minimum=1)
    )
    thinking = parse_thinking(options.get("thinking"), base=spec.default_thinking())
    problem = effort_problem(thinking, spec)
    if problem is not None:
        raise ConfigError("thinking.effort", problem)
    problem = thinking_problem(thinking, spec, max_tokens)
    if problem is not None:
        raise ConfigError("thinking.budgetTokens", problem)
    return Config(
        model=model,
        permission_mode=mode,
        thinking=thinking,
        max_tokens=max_tokens,
        tool_budget=_int(options, "toolBudget", 20, minimum=0),
        checkpoint_timeout_seconds=_int(options, "checkpointTimeoutSeconds", 900, minimum=1),
        stop_hook=_str(options, "stopHook"),
        max_parallel_tasks=_int(options, "maxParallelTasks", 3, minimum=1),
        provider=_provider(options.get("provider")),
        data_dir=Path(data_dir) if data_dir else None,
        max_tool_input_bytes=_int(
            options, "maxToolInputBytes", DEFAULT_MAX_TOOL_INPUT_BYTES, minimum=1024
        ),
        stream_idle_seconds=_int(
            options, "streamIdleSeconds", DEFAULT_STREAM_IDLE_SECONDS, minimum=1
        ),
        sandbox=_sandbox(options.get("sandbox", "auto")),
        scrub_env=_scrub_env(options.get("scrubEnv")),
        checkpoint_retention_days=_int(options, "checkpointRetentionDays", 30, minimum=1),
        cache_ttl=_cache_ttl(options.get("cacheTtl", "5m")),
        server_tools=ServerTools(
            _web_tool(options.get("webSearch"), "webSearch"),
            _web_tool(options.get("webFetch"), "webFetch"),
        ),
        mcp=_mcp(options),
        hooks=_hooks(options.get("hooks")),
        language_servers=_language_servers(options.get("languageServers")),
        workspace_trust=_workspace_trust(options.get("workspaceTrust")),
    )
