"""Diagnostics after edits from the configured language servers, for the clients that do not
offer their editor's (``tiller run``, ``tiller chat``, most ACP clients).

One `LanguageServers` per workspace, shared by its sessions. A file no server checks costs
nothing (the client, and pygls with it, is imported at the first start). The first edit of a
file a server checks starts that server (``client.py``); every wait, the start included, is
bounded by the entry's ``timeoutSeconds``. A server that cannot start, exits, or does not
answer in time gives `NoDiagnostics` with a notice, never a failed or stalled edit: one that
did not finish starting is ended, one that started but is slow to report (a first analysis of
a large project) is asked again at the next edit, and a server that failed `MAX_FAILURES`
times in a row (or whose program is missing) is ended and stays off until Tiller restarts. An
interrupt cancels the wait at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from tiller.errors import LanguageServerFailed
from tiller.extend.language_servers.config import LanguageServerConfig, LanguageServersConfig
from tiller.workspace.diagnostics import NONE, Diagnostic, NoDiagnostics
from tiller.workspace.tool_env import EnvRules

if TYPE_CHECKING:
    from tiller.extend.language_servers.client import LanguageServer

log = logging.getLogger(__name__)

MAX_FAILURES: Final = 3
MAX_FILE_BYTES: Final = 4 * 1_048_576  # larger files are not sent to a language server


class LanguageServers:
    """The language servers of one workspace, as a source of diagnostics after edits."""

    def __init__(self, config: LanguageServersConfig, workspace: Path, rules: EnvRules) -> None:
        self.config = config
        self.workspace = workspace
        self.rules = rules
        self._running: dict[str, LanguageServer] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._failures: Counter[str] = Counter()

    async def reconfigure(self, config: LanguageServersConfig) -> None:
        """The files read again (the folder's trust changed): a running server whose entry is
        gone or changed is ended; the others stay."""
        kept = {s.name: s for s in config.servers}
        for name, server in list(self._running.items()):
            if kept.get(name) != server.config:
                del self._running[name]
                await server.stop()
        self.config = config
        self._failures.clear()

    async def diagnostics(
        self, turn_id: str, paths: Sequence[Path], settle: bool
    ) -> tuple[Diagnostic, ...] | NoDiagnostics:
        found: list[Diagnostic] = []
        for path in paths:
            config = self.config.server_for(path)
            if config is None or self._failures[config.name] >= MAX_FAILURES:
                return NONE
            text = await asyncio.to_thread(_text_of, path)
            if text is None:  # no file yet (a write creates it), or not text
                continue
            one = await self._checked(config, path, text)
            if isinstance(one, NoDiagnostics):
                return one
            found.extend(one)
        return tuple(found)

    async def _checked(
        self, config: LanguageServerConfig, path: Path, text: str
    ) -> tuple[Diagnostic, ...] | NoDiagnostics:
        lock = self._locks.setdefault(config.name, asyncio.Lock())
        try:
            async with asyncio.timeout(config.timeout_seconds), lock:
                server = await self._server(config)
                found = await server.diagnostics(path, text)
        except TimeoutError:
            started = self._running.get(config.name)
            slow = started is not None and started.ready  # up, but still working on it
            why = f"did not answer within {config.timeout_seconds}s"
            return await self._failed(config, why, end=not slow)
        except LanguageServerFailed as err:
            return await self._failed(config, err.message, lasting=err.lasting)
        except (OSError, ConnectionError) as err:  # its pipes broke
            return await self._failed(config, f"failed: {err}")
        self._failures[config.name] = 0  # failures count in a row
        return found

    async def _server(self, config: LanguageServerConfig) -> LanguageServer:
        from tiller.extend.language_servers.client import LanguageServer  # pygls: when needed

        server = self._running.get(config.name)
        if server is not None and server.running:
            return server
        server = LanguageServer(config, self.workspace, self.rules)
        self._running[config.name] = server
        await server.start()
        return server

    async def _failed(
        self, config: LanguageServerConfig, why: str, *, lasting: bool = False, end: bool = True
    ) -> NoDiagnostics:
        """The notice of a failure: what happened and what follows. A server that started but
        is slow to report (``end`` false) keeps running, to be asked again at the next edit;
        any other, or one that failed `MAX_FAILURES` times in a row, is ended (not asked: it
        may hang)."""
        self._failures[config.name] += MAX_FAILURES if lasting else 1
        off = self._failures[config.name] >= MAX_FAILURES
        if end or off:
            server = self._running.pop(config.name, None)
            if server is not None:
                await asyncio.shield(server.stop(at_once=True))
        if off:
            then = (
                f"it is off until Tiller restarts (edits of {', '.join(config.extensions)} "
                "files get no diagnostics)"
            )
        else:
            then = "it starts again at the next edit" if end else "the next edit asks it again"
        log.warning("language server %s %s: no diagnostics for this edit", config.name, why)
        return NoDiagnostics(
            f"Language server {config.name} {why}: no diagnostics for this edit; {then}"
        )

    async def close(self) -> None:
        """Stop every running server."""
        running, self._running = list(self._running.values()), {}
        await asyncio.gather(*(server.stop() for server in running))


def _text_of(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
