"""Keepers whose shadow repositories overlap take turns.

After the workspace folders change ({ws, api} -> {ws} -> {ws, api}), the runtime has a
keeper for each set of roots, and both use ``ws``'s shadow repository. CI once saw
housekeeping of the one-root keeper run beside the two-root keeper's restore. It "finished"
that restore, because the journal was there, and removed the journal. The restore then ended
on `FileNotFoundError`. The runtime now gives every keeper one lock."""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tiller.core.config import Config, ScriptedSettings
from tiller.runtime import Runtime
from tiller.workspace.checkpoints.shadow_repo import ShadowRepo
from tiller.workspace.roots import WorkspaceRoots


def two_roots(tmp_path: Path) -> tuple[Runtime, Path, Path]:
    ws, api = tmp_path / "ws", tmp_path / "api"
    for root in (ws, api):
        root.mkdir()
        (root / "f.txt").write_text("before\n")
    config = Config("claude-test-1", provider=ScriptedSettings("demo"), data_dir=tmp_path / "data")
    return Runtime(replace(config, sandbox="off")), ws, api


async def test_two_keepers_of_one_folder_made_at_once_set_it_up_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Their first housekeeping ran at once: two ``git init`` of one repository ("File
    exists"), and one keeper's checkpoints were off until its next housekeeping."""
    runtime, ws, api = two_roots(tmp_path)
    caplog.set_level(logging.WARNING, logger="tiller.workspace.checkpoints.rewind")
    runtime.checkpoints(WorkspaceRoots.of(ws, api))
    runtime.checkpoints(WorkspaceRoots.of(ws))
    await asyncio.gather(*runtime._background)
    assert [r.getMessage() for r in caplog.records] == []


async def test_housekeeping_of_one_keeper_waits_for_anothers_restore_of_the_same_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    runtime, ws, api = two_roots(tmp_path)
    both = runtime.checkpoints(WorkspaceRoots.of(ws, api))
    await asyncio.gather(*runtime._background)  # its first housekeeping
    alone = runtime.checkpoints(WorkspaceRoots.of(ws))
    await asyncio.gather(*runtime._background)
    assert both is not None and alone is not None
    target = await both.snapshot_now("before the agent")
    for root in (ws, api):
        (root / "f.txt").write_text("after\n")

    held, release = threading.Event(), threading.Event()
    snapshot = ShadowRepo.snapshot

    def hold_restores(repo: ShadowRepo, why: str, *args: Any, **kwargs: Any) -> Any:
        if why == "before restore" and repo.workspace == ws:  # its journal is written
            held.set()
            release.wait(30)
        return snapshot(repo, why, *args, **kwargs)

    monkeypatch.setattr(ShadowRepo, "snapshot", hold_restores)
    caplog.set_level(logging.WARNING, logger="tiller.workspace.checkpoints.rewind")
    restore = asyncio.ensure_future(both.restore(target))
    assert await asyncio.to_thread(held.wait, 30)
    housekeeping = asyncio.ensure_future(alone.housekeeping())
    await asyncio.sleep(0)  # one turn of the loop: it is at the lock (or, shared not, past it)
    release.set()
    await asyncio.gather(restore, housekeeping)

    assert [r.getMessage() for r in caplog.records] == []  # nothing "finished", nothing failed
    assert (ws / "f.txt").read_text() == (api / "f.txt").read_text() == "before\n"
    assert not both.repo.restore_pending()
