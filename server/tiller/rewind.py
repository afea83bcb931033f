"""Checkpoints around every turn and the rewind that uses them (the async face of
``checkpoints.ShadowRepo``: one git operation at a time, off the event loop)."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .checkpoints import Changes, CheckpointError, ShadowRepo, git_available, shadow_dir_for
from .store import CheckpointRow, CheckpointTable, SessionStore

log = logging.getLogger(__name__)

GC_EVERY = 50  # snapshots between background packs


@dataclass(frozen=True)
class RewindPreview:
    """What a rewind would do, and which of those files someone other than the agent changed
    after the turn (so a client can warn before overwriting them)."""

    changes: Changes
    user_changed: tuple[str, ...]


@dataclass
class CheckpointKeeper:
    """Snapshots the workspace before and after each turn; restores any of them."""

    repo: ShadowRepo
    table: CheckpointTable
    retention_days: int = 30
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _since_gc: int = 0
    _background: set[asyncio.Task[None]] = field(default_factory=set)

    @staticmethod
    def open(
        data_dir: Path, workspace: Path, store: SessionStore, retention_days: int
    ) -> CheckpointKeeper | None:
        """None when git is missing (checkpoints are then off, and the user is told)."""
        if not git_available():
            return None
        repo = ShadowRepo(shadow_dir_for(data_dir, workspace), workspace)
        return CheckpointKeeper(repo, CheckpointTable(store), retention_days)

    async def before_turn(self, session_id: str, turn_id: str, prompt: str) -> None:
        """Snapshot the workspace as the turn starts; raises CheckpointError."""
        async with self._lock:  # the row is written before the turn's closing snapshot looks
            await asyncio.to_thread(self.repo.finish_interrupted_restore)
            snap = await asyncio.to_thread(self.repo.snapshot, f"before {turn_id}")
            self.table.add(
                CheckpointRow(
                    session_id, turn_id, prompt.strip()[:200], time.time(), snap.commit, None, 0,
                    snap.skipped,
                )
            )  # fmt: skip

    def after_turn(self, session_id: str, turn_id: str) -> None:
        """Snapshot the workspace as the turn ended, in the background (the turn's end is
        never delayed by it; the next turn's snapshot waits for it)."""
        task = asyncio.ensure_future(self._after(session_id, turn_id))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _after(self, session_id: str, turn_id: str) -> None:
        try:
            async with self._lock:
                rows = self.table.of_session(session_id)
                row = next((r for r in rows if r.turn_id == turn_id), None)
                if row is None:
                    return  # no snapshot was taken as the turn started
                snap = await asyncio.to_thread(self.repo.snapshot, f"after {turn_id}")
                changes = await asyncio.to_thread(self.repo.changes, snap.commit, row.before)
            self.table.finish(session_id, turn_id, snap.commit, changes.count)
            self._since_gc += 1
            if self._since_gc >= GC_EVERY:
                self._since_gc = 0
                await self.housekeeping()
        except (CheckpointError, OSError) as err:
            log.warning("checkpoint after %s failed: %s", turn_id, err)

    async def settled(self) -> None:
        """Wait for background snapshots (tests, shutdown)."""
        while self._background:
            await asyncio.wait(set(self._background))

    def of_session(self, session_id: str) -> list[CheckpointRow]:
        return self.table.of_session(session_id)

    async def preview(self, rows: Sequence[CheckpointRow], index: int) -> RewindPreview:
        """Rewinding to before ``rows[index]``: the changes, and the files changed by someone
        else than the agent since (between turns, or after the last one)."""
        async with self._lock:
            now = (await asyncio.to_thread(self.repo.snapshot, "rewind preview")).commit
            changes = await asyncio.to_thread(self.repo.changes, now, rows[index].before)
            outside: set[str] = set()
            later = rows[index:]
            for done, following in itertools.pairwise(later):
                if done.after is not None:
                    gap = await asyncio.to_thread(self.repo.changes, following.before, done.after)
                    outside.update(gap.changed + gap.added + gap.removed)
            last = later[-1].after
            if last is not None:
                gap = await asyncio.to_thread(self.repo.changes, now, last)
                outside.update(gap.changed + gap.added + gap.removed)
        touched = set(changes.changed + changes.added + changes.removed)
        return RewindPreview(changes, tuple(sorted(outside & touched)))

    async def snapshot_now(self, why: str) -> str:
        async with self._lock:
            return (await asyncio.to_thread(self.repo.snapshot, why)).commit

    async def restore(self, commit: str) -> Changes:
        async with self._lock:
            return await asyncio.to_thread(self.repo.restore, commit)

    async def housekeeping(self) -> None:
        """Drop checkpoints past their retention, then pack the shadow repository (between
        turns, in a worker thread)."""
        self.table.prune(time.time() - self.retention_days * 86400)
        live = self.table.live_commits()
        try:
            async with self._lock:
                await asyncio.to_thread(self.repo.ensure)
                await asyncio.to_thread(self.repo.keep_alive, live)
            # Outside the lock: git's own prune grace keeps a running snapshot's fresh objects.
            await asyncio.to_thread(self.repo.gc)
        except (CheckpointError, OSError) as err:
            log.warning("checkpoint housekeeping failed: %s", err)
