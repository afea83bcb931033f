"""The one composition root: what a Tiller process builds once from its settings, whichever
face it serves (the Tiller protocol in ``lsp``/``rpc.py``, ACP in ``acp/``).

It owns the model provider, the session store, the shell policy (sandbox probe and tool
environment), one checkpoint keeper per workspace with its housekeeping, the warm-up of what
the first answer and the first command need, and the notices every face shows at start.
Light to import: no pygls, no SDK.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Final

from tiller.core.config import Config
from tiller.errors import TillerError
from tiller.extend.language_servers.config import read_language_servers
from tiller.extend.language_servers.diagnostics import LanguageServers
from tiller.extend.mcp.config import read_mcp_config
from tiller.extend.mcp.manager import McpManager
from tiller.extend.mcp.server import McpSettings
from tiller.extend.settings_layer import Settings, read_settings
from tiller.extend.trust import Trust, decided
from tiller.model.provider import AnthropicProvider
from tiller.services import make_provider, open_checkpoints, open_shell, open_store
from tiller.workspace.bash.readonly import is_read_only_command
from tiller.workspace.checkpoints.rewind import CheckpointKeeper
from tiller.workspace.roots import WorkspaceRoots
from tiller.workspace.tool_env import EnvRules

log = logging.getLogger(__name__)

MODEL_LIST_SECONDS: Final = 15.0
CHECKPOINTS_OFF = (
    "Checkpoints are off: git is not installed, so turns cannot be rewound. Install git and "
    "restart Tiller."
)


class Runtime:
    """Settings, provider, store, shell policy and checkpoints, shared by every session."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.provider = make_provider(config)
        self.store = open_store(config)
        self.shell = open_shell(config)  # probes bwrap once
        self._keepers: dict[WorkspaceRoots, CheckpointKeeper | None] = {}
        self._checkpoint_lock = asyncio.Lock()  # one for every keeper: their repos overlap
        self._mcp: dict[Path, McpManager] = {}
        self._language_servers: dict[Path, LanguageServers] = {}
        self._trust: dict[Path, Trust] = {}
        self._background: set[asyncio.Future[Any]] = set()
        self._warming: asyncio.Future[None] | None = None
        self.models: list[tuple[str, str]] = []  # (id, display name), once listed
        self._listing: asyncio.Future[None] | None = None

    def checkpoints(self, roots: WorkspaceRoots) -> CheckpointKeeper | None:
        """One keeper per workspace (its set of roots), shared by its sessions (None: git is
        missing). The first use starts its housekeeping: a restore cut by a crash is
        finished, old checkpoints are pruned, the shadow repositories are packed."""
        if roots not in self._keepers:
            keeper = open_checkpoints(self.config, roots, self.store, self._checkpoint_lock)
            self._keepers[roots] = keeper
            if keeper is not None:
                self.background(keeper.housekeeping())
        return self._keepers[roots]

    def trust(self, workspace: Path) -> Trust:
        """Whether ``workspace``'s files may run programs and widen grants: what the client
        said (VS Code's workspace trust, ``tiller run --trust``), else the user's recorded
        decision (``trust.decided``), read once and kept until ``set_trust``."""
        if workspace not in self._trust:
            self._trust[workspace] = self.config.workspace_trust or decided(workspace)
        return self._trust[workspace]

    def settings(self, workspace: Path) -> Settings:
        """``workspace``'s settings files as they are now, with its trust."""
        return read_settings(workspace, self.trust(workspace))

    async def set_trust(self, workspace: Path, trust: Trust) -> None:
        """The user decided (``/trust``, the editor's trust granted): the files are read again
        with the new trust, and MCP and language servers whose entries changed are replaced
        (an untrusted folder's never run)."""
        self._trust[workspace] = trust
        settings = self.settings(workspace)
        if workspace in self._mcp:
            options = self.config.mcp
            await self._mcp[workspace].reconfigure(
                read_mcp_config(settings, options.servers, None, options.enable)
            )
        if workspace in self._language_servers:
            config = read_language_servers(settings, self.config.language_servers)
            await self._language_servers[workspace].reconfigure(config)

    def mcp(self, workspace: Path) -> McpManager:
        """The MCP servers of ``workspace``, shared by its sessions: configured when first
        asked for (the files are read then), started only when something needs them."""
        if workspace not in self._mcp:
            options = self.config.mcp
            settings = McpSettings(
                options.call_seconds, options.start_seconds,
                EnvRules.from_setting(self.config.scrub_env),
            )  # fmt: skip
            self._mcp[workspace] = McpManager.read(
                self.settings(workspace), settings, options.servers, options.enable,
                options.read_only,
            )  # fmt: skip
        return self._mcp[workspace]

    def language_servers(self, workspace: Path) -> LanguageServers:
        """The language servers of ``workspace``, shared by its sessions, for clients that do
        not offer their editor's diagnostics: configured when first asked for (the settings
        files are read then), each started at the first edit of a file it checks. With none
        configured, an edit asks nothing and costs nothing."""
        if workspace not in self._language_servers:
            config = read_language_servers(self.settings(workspace), self.config.language_servers)
            rules = EnvRules.from_setting(self.config.scrub_env)
            self._language_servers[workspace] = LanguageServers(config, workspace, rules)
        return self._language_servers[workspace]

    async def close(self) -> None:
        """Stop what runs beside the sessions: every MCP server and language server."""
        await asyncio.gather(
            *(manager.close() for manager in self._mcp.values()),
            *(servers.close() for servers in self._language_servers.values()),
        )

    def notices(self, roots: WorkspaceRoots) -> tuple[str, ...]:
        """What a face tells the user when a session of ``roots`` opens: checkpoints off,
        what is wrong in the MCP servers' and language servers' configuration, and what is
        assumed of a configured model the catalog does not know (never a silent 200K window)."""
        found = () if self.checkpoints(roots) is not None else (CHECKPOINTS_OFF,)
        found = (*found, *(f"MCP configuration: {p}" for p in self.mcp(roots.primary).problems))
        problems = self.language_servers(roots.primary).config.problems
        found = (*found, *(f"Language servers: {p}" for p in problems))
        model = self.model_notice()
        return (*found, model) if model else found

    def model_notice(self) -> str | None:
        """What is guessed of the configured model. While the guess covers limits the API's
        model list may give (``max_input_tokens``, ``max_tokens``), the list is asked for in the
        background: what it says joins the provider's catalog and holds from the next request on
        after it arrives."""
        spec = self.provider.spec(self.config.model)
        if spec.notice is None:
            return None
        if not self.models and self._listing is None and _loop_running():
            self._listing = self.background(self._learn_models())
            return f"{spec.notice} Asking the API's model list for its limits."
        return spec.notice

    async def _learn_models(self) -> None:
        """The provider learns the limits from the list; ``self.models`` (what ``setModel``
        checks ids against) stays as a listing the user asked for leaves it."""
        try:
            await asyncio.wait_for(self.provider.list_models(), MODEL_LIST_SECONDS)
        except (TillerError, TimeoutError) as err:
            log.warning("listing models failed: %s", err)
            return
        spec = self.provider.spec(self.config.model)
        log.info(
            "model %s: %s-token window, %s output tokens (%s)",
            spec.id, spec.context_window, spec.max_output, spec.notice or "from the API",
        )  # fmt: skip

    def warm_up(self, workspace: Path) -> None:
        """Load, off the event loop, what the first command and the first answer need: the
        read-only classifier's parser (~0.1 s), then the SDK. One after the other (together
        they only compete for the GIL), parser first: loaded after the SDK, it would compete
        with the first model request instead (bench/compare.py measured both orders)."""
        if self._warming is None:
            self._warming = self.background(self._warm(workspace))

    async def _warm(self, workspace: Path) -> None:
        await asyncio.to_thread(is_read_only_command, "true", workspace)
        if isinstance(self.provider, AnthropicProvider):
            await self.provider.warm_up()

    def background(self, work: Coroutine[Any, Any, None]) -> asyncio.Future[None]:
        """Run ``work`` in the background, kept alive until it ends."""
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def list_models(self) -> list[tuple[str, str]]:
        """The provider's models (``GET /v1/models``), listed once; [] when that fails."""
        if not self.models:
            try:
                found = await asyncio.wait_for(self.provider.list_models(), MODEL_LIST_SECONDS)
            except (TillerError, TimeoutError) as err:
                log.warning("listing models failed: %s", err)
                return []
            self.models = [(m.id, m.display_name or m.id) for m in found]
        return self.models


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
