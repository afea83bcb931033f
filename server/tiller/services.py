"""What a server builds once from its settings, whatever protocol it speaks (the Tiller
protocol in rpc.py, ACP in acp/): the model provider, the session store, the shell policy
(sandbox and tool environment) and the checkpoint keeper of a workspace. Light to import:
no pygls, no SDK."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from tiller.core.config import AnthropicSettings, Config, ScriptedSettings
from tiller.errors import ConfigError
from tiller.model.provider import AnthropicProvider, Provider, ScriptedProvider
from tiller.workspace.checkpoints.rewind import CheckpointKeeper
from tiller.workspace.roots import WorkspaceRoots
from tiller.workspace.sandbox import ShellPolicy, shell_policy
from tiller.workspace.store import SessionStore, StoreTooNew

if TYPE_CHECKING:
    import asyncio


def make_provider(config: Config) -> Provider:
    match config.provider:
        case ScriptedSettings(script="demo"):
            from tiller.model.demo_provider import DemoProvider  # the offline demo: scenes, endless

            return DemoProvider()
        case ScriptedSettings(script=script):
            return ScriptedProvider.load(script)
        case AnthropicSettings(base_url=base_url, api_key=api_key):
            return AnthropicProvider(
                base_url,
                api_key,
                max_tool_input_bytes=config.max_tool_input_bytes,
                stream_idle_seconds=config.stream_idle_seconds,
                cache_ttl=config.cache_ttl,
            )


def open_store(config: Config) -> SessionStore:
    path = config.resolved_data_dir / "sessions.sqlite3"
    try:
        return SessionStore(path)
    except (OSError, sqlite3.Error, StoreTooNew) as err:
        raise ConfigError("dataDir", f"cannot open the session store at {path}: {err}") from err


def open_shell(config: Config) -> ShellPolicy:
    """The sandbox backend (probed once per process) and the scrubbed tool environment."""
    return shell_policy(config.sandbox, config.scrub_env)


def open_checkpoints(
    config: Config, roots: WorkspaceRoots, store: SessionStore, lock: asyncio.Lock
) -> CheckpointKeeper | None:
    """None when git is missing: checkpoints are then off (the caller tells the user).
    ``lock``: the one every keeper of this data dir shares (``CheckpointKeeper``)."""
    return CheckpointKeeper.open(
        config.resolved_data_dir, roots, store, config.checkpoint_retention_days, lock
    )
