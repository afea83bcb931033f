"""What every ACP session of this process shares: settings, the model provider, the store.

Built with ``tiller.services``, like the Tiller protocol's server (without importing pygls and
lsprotocol: a second and a half of start-up).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Final

from ..config import Config
from ..errors import TillerError
from ..rewind import CheckpointKeeper
from ..services import make_provider, open_checkpoints, open_shell, open_store

log = logging.getLogger(__name__)

MODEL_LIST_SECONDS: Final = 15.0


class Runtime:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.provider = make_provider(config)
        self.store = open_store(config)
        self.shell = open_shell(config)
        self._checkpoints: dict[Path, CheckpointKeeper | None] = {}
        self.models: list[tuple[str, str]] = []  # (id, display name), once listed

    def checkpoints(self, workspace: Path) -> CheckpointKeeper | None:
        """One keeper per workspace, shared by its sessions (None: git is missing)."""
        if workspace not in self._checkpoints:
            self._checkpoints[workspace] = open_checkpoints(self.config, workspace, self.store)
        return self._checkpoints[workspace]

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
