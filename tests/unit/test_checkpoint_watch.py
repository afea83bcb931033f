"""Incremental snapshots (issue 23): the kernel's word on what changed (inotify), objects
written without git, the stat cache's blind window, and a turn's snapshot brought up to date
right before its first write. A watched snapshot must hold exactly what a full scan holds:
the oracle is a second, unwatched shadow repository of the same workspace (same files, same
tree id)."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tiller.core.turn import checkpoints as turn_checkpoints
from tiller.core.turn.checkpoints import snapshot_before
from tiller.protocol import Thinking
from tiller.workspace.checkpoints.rewind import CheckpointKeeper
from tiller.workspace.checkpoints.shadow_repo import ShadowRepo, Snapshot
from tiller.workspace.checkpoints.watch import FolderWatch
from tiller.workspace.roots import WorkspaceRoots
from tiller.workspace.store import SessionRow, SessionStore

needs_watch = pytest.mark.skipif(
    FolderWatch.start(Path.cwd()) is None, reason="no inotify on this file system"
)


def full_tree(tmp_path: Path, ws: Path) -> str:
    """The tree a fresh, unwatched shadow repository records for ``ws``."""
    return ShadowRepo(tmp_path / "oracle" / f"{time.monotonic_ns()}.git", ws).snapshot("x").tree


def counting(repo: ShadowRepo) -> list[int]:
    hashed: list[int] = []
    original = repo._hash_files

    def count(paths: Sequence[str]) -> list[str | None]:
        hashed.append(len(paths))
        return original(paths)

    repo._hash_files = count  # type: ignore[method-assign]
    return hashed


def watched_workspace(tmp_path: Path, files: int = 20) -> tuple[ShadowRepo, Path]:
    ws = tmp_path / "ws"
    for n in range(files):
        folder = ws / f"pkg{n % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.txt").write_text(f"{n}\n")
    (ws / ".gitignore").write_text("*.log\nbuild/\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.bin").write_text("ignored")
    return ShadowRepo(tmp_path / "shadow.git", ws, watch=True), ws


def rewrite_in_the_same_tick(path: Path, data: bytes) -> None:
    """Write ``data`` (the same size as before) and put the old mtime back, as a second write
    within one timestamp tick of the file system leaves it."""
    before = os.stat(path)
    assert before.st_size == len(data)
    path.write_bytes(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.parametrize("watch", [False, True], ids=["scanned", "watched"])
def test_a_same_size_rewrite_in_the_same_mtime_tick_is_in_the_next_snapshot(
    tmp_path: Path, watch: bool
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_bytes(b"first")
    repo = ShadowRepo(tmp_path / "shadow.git", ws, watch=watch)
    first = repo.snapshot("one")
    rewrite_in_the_same_tick(ws / "a.txt", b"secnd")
    second = repo.snapshot("two")
    assert second.tree != first.tree
    assert repo.changes(second.commit, first.commit).changed == ("a.txt",)
    assert second.tree == full_tree(tmp_path, ws)


def test_a_file_long_unchanged_is_not_hashed_again_by_a_full_scan(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(10):
        (ws / f"f{n}.txt").write_text(f"{n}\n")
        os.utime(ws / f"f{n}.txt", (time.time() - 3600,) * 2)
    repo = ShadowRepo(tmp_path / "shadow.git", ws)
    repo.snapshot("one")
    hashed = counting(repo)
    (ws / "f3.txt").write_text("changed\n")
    repo.snapshot("two")
    assert hashed == [1]


@needs_watch
def test_a_watched_snapshot_hashes_only_the_files_the_kernel_named(tmp_path: Path) -> None:
    repo, ws = watched_workspace(tmp_path)
    repo.snapshot("one")
    hashed = counting(repo)
    (ws / "pkg1" / "f1.txt").write_text("changed\n")
    snap = repo.snapshot("two")
    assert hashed == [1]
    assert snap.tree == full_tree(tmp_path, ws)


@needs_watch
def test_a_watched_snapshot_holds_new_and_deleted_files_and_leaves_ignored_ones_out(
    tmp_path: Path,
) -> None:
    repo, ws = watched_workspace(tmp_path)
    repo.snapshot("one")
    (ws / "pkg0" / "new.txt").write_text("new\n")
    (ws / "pkg0" / "noise.log").write_text("ignored\n")
    (ws / "build" / "more.bin").write_text("ignored\n")
    (ws / "pkg2" / "f2.txt").unlink()
    os.symlink("f3.txt", ws / "pkg3" / "link")
    os.chmod(ws / "pkg1" / "f5.txt", 0o755)
    snap = repo.snapshot("two")
    assert snap.tree == full_tree(tmp_path, ws)
    held = repo.tree(snap.commit)
    assert "pkg0/new.txt" in held and "pkg2/f2.txt" not in held
    assert held["pkg3/link"].mode == "120000" and held["pkg1/f5.txt"].mode == "100755"
    assert not any(p.endswith(".log") or p.startswith("build/") for p in held)


@needs_watch
@pytest.mark.parametrize("change", ["new folder", "ignore rule", "folder moved"])
def test_what_the_watch_cannot_follow_makes_the_next_snapshot_scan_everything(
    tmp_path: Path, change: str
) -> None:
    repo, ws = watched_workspace(tmp_path)
    repo.snapshot("one")
    match change:
        case "new folder":
            (ws / "fresh" / "deep").mkdir(parents=True)
            (ws / "fresh" / "deep" / "x.txt").write_text("x")
        case "ignore rule":
            (ws / ".gitignore").write_text("*.log\n")  # build/ is no longer ignored
        case _:
            (ws / "pkg1").rename(ws / "moved")
    snap = repo.snapshot("two")
    assert snap.tree == full_tree(tmp_path, ws)
    (ws / "pkg0" / "f0.txt").write_text("after\n")  # and the new watch follows again
    assert repo.snapshot("three").tree == full_tree(tmp_path, ws)


def test_a_restore_through_objects_written_without_git_is_exact(tmp_path: Path) -> None:
    repo, ws = watched_workspace(tmp_path)
    first = repo.snapshot("one")
    (ws / "pkg0" / "f0.txt").write_text("changed")
    (ws / "pkg1" / "f1.txt").unlink()
    (ws / "pkg2" / "extra.txt").write_text("extra")
    repo.snapshot("two")
    repo.restore(first.commit)
    assert (ws / "pkg0" / "f0.txt").read_text() == "0\n"
    assert (ws / "pkg1" / "f1.txt").read_text() == "1\n"
    assert not (ws / "pkg2" / "extra.txt").exists()
    fsck = subprocess.run(
        ["git", "--git-dir", str(repo.git_dir), "fsck", "--no-dangling", first.commit],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert fsck.returncode == 0, fsck.stderr


# --- a turn's snapshot ----------------------------------------------------------------------


def keeper_for(tmp_path: Path, roots: int = 1) -> tuple[CheckpointKeeper, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "user.txt").write_text("as the turn started\n")
    (ws / "agent.txt").write_text("before the agent\n")
    more = [tmp_path / f"root{n}" for n in range(1, roots)]
    for root in more:
        root.mkdir()
        (root / "other.txt").write_text("another root\n")
    store = SessionStore(tmp_path / "data" / "sessions.sqlite3")
    keeper = CheckpointKeeper.open(tmp_path / "data", WorkspaceRoots.of(ws, *more), store, 30)
    assert keeper is not None
    store.create(
        SessionRow("ses_1", str(ws), "t", None, time.time(), time.time(),
                   "claude-test-1", "default", Thinking(), (), 0)
    )  # fmt: skip
    return keeper, ws


@pytest.mark.parametrize("roots", [1, 2], ids=["one root", "two roots"])
async def test_a_user_write_after_the_turns_snapshot_but_before_its_first_write_is_kept(
    tmp_path: Path, roots: int
) -> None:
    """The snapshot runs as the turn starts; the user saves a file while the model answers;
    the agent writes. Rewinding the turn undoes the agent's write only."""
    keeper, ws = keeper_for(tmp_path, roots)
    said: list[str] = []
    turn = snapshot_before(keeper, "ses_1", "turn_1", "go", said.append)
    assert turn is not None
    await turn.taken
    (ws / "user.txt").write_text("saved by the user meanwhile\n")
    await turn.before_writes()
    (ws / "agent.txt").write_text("written by the agent\n")
    keeper.after_turn("ses_1", "turn_1")
    await keeper.settled()
    (row,) = keeper.of_session("ses_1")
    await keeper.restore(row.before)
    assert (ws / "user.txt").read_text() == "saved by the user meanwhile\n"
    assert (ws / "agent.txt").read_text() == "before the agent\n"
    assert said == []


async def test_a_snapshot_that_never_finishes_is_given_up_and_the_turn_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keeper, ws = keeper_for(tmp_path)
    release = threading.Event()
    original: Callable[[str], Snapshot] = keeper.repo.snapshot

    def stuck(message: str) -> Snapshot:
        release.wait(30)
        return original(message)

    monkeypatch.setattr(keeper.repo, "snapshot", stuck)
    monkeypatch.setattr(turn_checkpoints, "SNAPSHOT_WAIT_S", 0.05)
    said: list[str] = []
    turn = snapshot_before(keeper, "ses_1", "turn_1", "go", said.append)
    assert turn is not None
    await turn.before_writes()  # returns: the turn is never held for good
    assert said and "No checkpoint for this turn" in said[0]
    (ws / "agent.txt").write_text("written by the agent\n")
    release.set()
    await turn.taken
    assert keeper.of_session("ses_1") == []  # a snapshot taken after a write is no "before"
