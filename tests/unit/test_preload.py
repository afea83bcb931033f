"""tiller.preload: slow imports off the event loop, once; imports without full GC passes."""

from __future__ import annotations

import asyncio
import gc
import importlib
import sys
import threading

import pytest

from tiller import preload


async def test_every_waiter_gets_the_same_import_and_it_runs_once_off_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: list[str] = []
    real_import = importlib.import_module

    def recording_import(name: str) -> object:
        threads.append(threading.current_thread().name)
        return real_import(name)

    monkeypatch.setattr(importlib, "import_module", recording_import)
    name = "tiller.workspace.bash.readonly"
    monkeypatch.setattr(preload, "_started", {})
    first, second = await asyncio.gather(preload.imported(name), preload.imported(name))
    assert first is second is sys.modules[name]
    assert threads == [f"import-{name}"]  # one import, in its own thread


async def test_a_failed_import_reaches_every_waiter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preload, "_started", {})
    for _ in range(2):
        with pytest.raises(ModuleNotFoundError):
            await preload.imported("tiller.no_such_module")


async def test_a_waiter_that_gives_up_does_not_spoil_the_import_for_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(preload, "_started", {})
    importing = threading.Event()
    release = threading.Event()
    real_import = importlib.import_module

    def slow_import(name: str) -> object:
        importing.set()
        release.wait(5)
        return real_import(name)

    monkeypatch.setattr(importlib, "import_module", slow_import)
    waiting = asyncio.ensure_future(preload.imported("json"))
    assert await asyncio.to_thread(importing.wait, 10)  # the import runs: the waiter waits
    waiting.cancel()
    release.set()
    assert await preload.imported("json") is sys.modules["json"]


async def test_what_waits_for_an_import_runs_once_it_ends_whether_registered_before_or_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(preload, "_started", {})
    monkeypatch.setattr(preload, "_after", {})
    ran: list[str] = []
    preload.after("json", lambda: ran.append("registered before the start"))
    assert ran == []  # nothing started the import yet
    await preload.imported("json")
    preload.after("json", lambda: ran.append("registered after the end"))
    assert ran == ["registered before the start", "registered after the end"]


def test_full_collections_pause_while_any_import_runs_and_resume_after_the_last() -> None:
    before = gc.get_threshold()
    with preload.full_collections_paused():
        with preload.full_collections_paused():
            assert gc.get_threshold()[2] == preload.PAUSED_FULL_THRESHOLD
        assert gc.get_threshold()[2] == preload.PAUSED_FULL_THRESHOLD  # one still running
    assert gc.get_threshold() == before
    assert gc.isenabled()
