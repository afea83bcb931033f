from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types

from fakeapi import FakeMessagesAPI
from harness import Tiller, start_tiller, stop_tiller
from warm import start_suite
from xdist_groups import pytest_runtest_setup  # noqa: F401  (a hook: the guard on groups)

StartTiller = Callable[..., Awaitable[Tiller]]


@pytest.fixture(scope="session", autouse=True)
def warm_start_of_this_test_process() -> Iterator[None]:
    """The harness's servers, and the clients these tests start as processes (``tiller run``,
    ``tiller chat``, ``tiller acp``), take the warm start from a template of this test
    process's own (a private ``XDG_RUNTIME_DIR``), started now and stopped at the end: never
    the user's."""
    place = start_suite()
    saved = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(place.root)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = saved
        place.stop()
        shutil.rmtree(place.root, ignore_errors=True)


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
        capabilities: types.ClientCapabilities | None = None,
        more_folders: Sequence[Path] = (),
        **options: Any,
    ) -> Tiller:
        merged: dict[str, Any] = {
            "provider": {"kind": "anthropic", "baseUrl": api.base_url, "apiKey": "test-key"},
            "model": "claude-test-1",
            "dataDir": str(tmp_path / "data"),
            # The test's own workspace, as a trusted editor window: its settings files apply.
            # The trust tests start servers without it (workspaceTrust=None).
            "workspaceTrust": {"trusted": True, "by": "the test"},
        }
        merged.update(options)
        merged = {k: v for k, v in merged.items() if v is not None}
        tiller = await start_tiller(
            workspace, tmp_path / "data", merged, capabilities, more_folders
        )
        running.append(tiller)
        return tiller

    yield starter
    for tiller in running:
        await stop_tiller(tiller)


@pytest_asyncio.fixture
async def tiller(start: StartTiller) -> Tiller:
    return await start()
