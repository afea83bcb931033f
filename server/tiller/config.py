"""``initializationOptions``: validated at the edge into one frozen value."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import platformdirs

from .errors import ConfigError
from .protocol import MODES, Mode, Thinking

log = logging.getLogger(__name__)

DEFAULT_MODEL = "claude-sonnet-4-6"


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
class Config:
    model: str
    permission_mode: Mode = "default"
    thinking: Thinking = Thinking()
    max_tokens: int = 8192
    tool_budget: int = 20
    checkpoint_timeout_seconds: int = 900
    stop_hook: str | None = None
    provider: ProviderSettings = AnthropicSettings()
    data_dir: Path | None = None

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
    }
)  # fmt: skip


def _int(options: dict[str, Any], key: str, default: int, *, minimum: int) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(key, f"expected an integer, got {value!r}")
    if value < minimum:
        raise ConfigError(key, f"must be at least {minimum}, got {value}")
    return value


def _str(options: dict[str, Any], key: str) -> str | None:
    value = options.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ConfigError(key, f"expected a non-empty string, got {value!r}")
    return value


def parse_thinking(value: Any, key: str = "thinking") -> Thinking:
    if value is None:
        return Thinking()
    if not isinstance(value, dict) or not isinstance(value.get("enabled"), bool):
        raise ConfigError(key, "expected {enabled: bool, budgetTokens?: int}")
    budget = value.get("budgetTokens", Thinking().budget_tokens)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1024:
        raise ConfigError(key, "budgetTokens must be an integer of at least 1024")
    return Thinking(value["enabled"], budget)


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
    return Config(
        model=model,
        permission_mode=mode,
        thinking=parse_thinking(options.get("thinking")),
        max_tokens=_int(options, "maxTokens", 8192, minimum=1),
        tool_budget=_int(options, "toolBudget", 20, minimum=0),
        checkpoint_timeout_seconds=_int(options, "checkpointTimeoutSeconds", 900, minimum=1),
        stop_hook=_str(options, "stopHook"),
        provider=_provider(options.get("provider")),
        data_dir=Path(data_dir) if data_dir else None,
    )
