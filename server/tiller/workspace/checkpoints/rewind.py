"""Checkpoints around every turn and the rewind that uses them (the async face of
``checkpoints.ShadowRepo``: one git operation at a time, off the event loop)."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tiller.workspace.checkpoints.roots import RootsShadow, absent_roots, commits_of_root
from tiller.workspace.checkpoints.shadow_repo import (
    Changes,
    CheckpointError,
    ShadowRepo,
    git_available,
    shadow_dir_for,
)
from tiller.workspace.roots import WorkspaceRoots
from tiller.workspace.store import CheckpointRow, CheckpointTable, SessionStore

log = logging.getLogger(__name__)

GC_EVERY = 50  # snapshots between background packs
Wanted = Callable[[], bool]  # whether the turn still waits for its snapshot


def _always() -> bool:
    return True


@dataclass(frozen=True)
class RewindPreview:
    """What a rewind would do, and which of those files someone other than the agent changed
    after the turn (so a client can warn before overwriting them)."""

    changes: Changes
    user_changed: tuple[str, ...]


@dataclass
class CheckpointKeeper:
    """Snapshots the workspace before and after each turn; restores any of them.

    A restore cut short (the server killed mid-rewind, or a failed one) is finished before
    anything else touches the workspace: every operation here finishes it first, under the
    same lock, and ``recover`` lets a turn wait for it before it runs at all. Keepers whose
    shadow repositories overlap (a folder's, alone and with other roots, after the workspace
    folders changed) must share ``lock``: else one's housekeeping "finishes" the other's
    restore under way, or packs the repository a snapshot is writing into."""

    repo: ShadowRepo | RootsShadow  # one root's, or every root's (one snapshot id for all)
    table: CheckpointTable
    retention_days: int = 30
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _since_gc: int = 0
    _background: set[asyncio.Task[None]] = field(default_factory=set)
    _recovered: list[str] = field(default_factory=list)  # finished, not yet reported
    _restores: int = 0  # restores asked for in this process and not yet done
    _before_tree: tuple[str, str] | None = None  # (turn id, tree) of the last "before" kept

    @staticmethod
    def open(
        data_dir: Path,
        roots: WorkspaceRoots,
        store: SessionStore,
        retention_days: int,
        lock: asyncio.Lock | None = None,
    ) -> CheckpointKeeper | None:
        """None when git is missing (checkpoints are then off, and the user is told)."""
        if not git_available():
            return None
        repo: ShadowRepo | RootsShadow
        if roots.several:
            repo = RootsShadow.open(data_dir, roots, watch=True)
        else:
            workspace = roots.primary
            repo = ShadowRepo(
                shadow_dir_for(data_dir, workspace), workspace, private=(data_dir,), watch=True
            )
        table = CheckpointTable(store)
        return CheckpointKeeper(repo, table, retention_days, lock or asyncio.Lock())

    async def recover(self) -> tuple[str, ...]:
        """Wait until no restore is pending: one cut short (the server killed mid-rewind, or
        a restore that failed) is finished now, one under way is waited for; raises
        CheckpointError or OSError when it cannot be finished. The targets of the restores
        finished so since the last call, for the caller to report."""
        if self._restores or await asyncio.to_thread(self.repo.restore_pending):
            task = asyncio.ensure_future(self._locked_finish())
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            try:
                await asyncio.shield(task)  # an interrupt never cuts a restore
            except (CheckpointError, OSError) as err:
                if not await asyncio.to_thread(self.repo.restore_pending):
                    raise
                raise CheckpointError(
                    f"{err}. Fix the cause and send the prompt again (the rewind is then "
                    f"finished first), or delete {self.repo.journal_path} to give that rewind up"
                ) from err
        done, self._recovered = tuple(self._recovered), []
        return done

    async def _locked_finish(self) -> None:
        async with self.lock:
            await self._finish_pending()

    async def _finish_pending(self) -> None:
        """Finish a restore cut short (call with the lock held)."""
        target = await asyncio.to_thread(self.repo.finish_interrupted_restore)
        if target is not None:
            log.warning("finished a restore to %s that was cut short", target)
            self._recovered.append(target)

    async def before_turn(
        self, session_id: str, turn_id: str, prompt: str, wanted: Wanted = _always
    ) -> None:
        """Snapshot the workspace as the turn starts; raises CheckpointError. No row is kept
        when ``wanted()`` says the turn stopped waiting for it meanwhile (its tools may have
        written since, so the snapshot may not be the turn's "before" any more)."""
        async with self.lock:  # the row is written before the turn's closing snapshot looks
            await self._finish_pending()
            snap = await asyncio.to_thread(self.repo.snapshot, f"before {turn_id}")
            if not wanted():
                return
            self._before_tree = (turn_id, snap.tree)
            self.table.add(
                CheckpointRow(
                    session_id, turn_id, prompt.strip()[:200], time.time(), snap.commit, None, 0,
                    snap.skipped,
                )
            )  # fmt: skip

    async def before_writes(self, session_id: str, turn_id: str, wanted: Wanted = _always) -> None:
        """Bring the turn's snapshot up to date right before its first tool that may write:
        what changed since the turn started (the user saving a file, a hook) is part of the
        workspace as the turn found it, so rewinding the turn keeps it. With a watch this
        looks at the changed files only; raises CheckpointError."""
        async with self.lock:
            if self.table.of_turn(session_id, turn_id) is None:
                return  # no snapshot was taken as the turn started
            snap = await asyncio.to_thread(self.repo.snapshot, f"before {turn_id}")
            if wanted() and (not snap.tree or self._before_tree != (turn_id, snap.tree)):
                self._before_tree = (turn_id, snap.tree)
                self.table.retake(session_id, turn_id, snap.commit, snap.skipped)

    def after_turn(self, session_id: str, turn_id: str) -> None:
        """Snapshot the workspace as the turn ended, in the background (the turn's end is
        never delayed by it; the next turn's snapshot waits for it)."""
        task = asyncio.ensure_future(self._after(session_id, turn_id))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _after(self, session_id: str, turn_id: str) -> None:
        try:
            async with self.lock:
                row = self.table.of_turn(session_id, turn_id)
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
        async with self.lock:
            await self._finish_pending()
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
        async with self.lock:
            await self._finish_pending()
            return (await asyncio.to_thread(self.repo.snapshot, why)).commit

    def absent_roots(self, commit: str) -> tuple[str, ...]:
        """The workspace folders snapshot id ``commit`` covers that this workspace lacks now
        (removed since the snapshot): restoring it would bring back only part of the turn."""
        repo = self.repo
        present = (
            [Path(k) for k in repo.repos] if isinstance(repo, RootsShadow) else [repo.workspace]
        )
        return absent_roots(commit, present)

    async def restore(self, commit: str) -> Changes:
        self._restores += 1  # a turn that starts meanwhile waits for it (``recover``)
        try:
            async with self.lock:
                await self._finish_pending()
                return await asyncio.to_thread(self.repo.restore, commit)
        finally:
            self._restores -= 1

    async def housekeeping(self) -> None:
        """Finish a restore cut short (at start), drop checkpoints past their retention, then
        let go of what no session uses and pack the shadow repository when that has work
        (between turns, in a worker thread)."""
        self.table.prune(time.time() - self.retention_days * 86400)
        live = self.table.live_commits(str(self.repo.workspace))
        if isinstance(self.repo, ShadowRepo):  # multi-root sessions of it name its commits too
            live = commits_of_root(live, self.repo.workspace)
        try:
            async with self.lock:
                await self._finish_pending()
                if await asyncio.to_thread(self.repo.ensure):
                    return  # made now: nothing in it to keep, let go or pack
                # Under the lock too: gc removes the object directories it empties, and a
                # snapshot writing into one of them meanwhile fails ("unable to create
                # temporary file"), leaving its turn without a checkpoint.
                await asyncio.to_thread(self.repo.collect, live)
        except (CheckpointError, OSError) as err:
            log.warning("checkpoint housekeeping failed: %s", err)
