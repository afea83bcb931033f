from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types

from fakeapi import FakeMessagesAPI
from harness import Tiller, start_tiller, stop_tiller

StartTiller = Callable[..., Awaitable[Tiller]]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest_asyncio.fixture
async def api() -> AsyncIterator[FakeMessagesAPI]:
    async with FakeMessagesAPI(api_key="test-key") as fake:
        yield fake


@pytest_asyncio.fixture
async def start(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> AsyncIterator[StartTiller]:
    """Start a Tiller server pointed at the fake API; every server is shut down after the test."""
    running: list[Tiller] = []

    async def starter(
        capabilities: types.ClientCapabilities | None = None, **options: Any
    ) -> Tiller:
        merged: dict[str, Any] = {
            "provider": {"kind": "anthropic", "baseUrl": api.base_url, "apiKey": "test-key"},
            "model": "claude-test-1",
            "dataDir": str(tmp_path / "data"),
        }
        merged.update(options)
        tiller = await start_tiller(workspace, tmp_path / "data", merged, capabilities)
        running.append(tiller)
        return tiller

    yield starter
    for tiller in running:
        await stop_tiller(tiller)


@pytest_asyncio.fixture
async def tiller(start: StartTiller) -> Tiller:
    return await start()
