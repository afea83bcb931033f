"""The shadow repository: snapshots of whatever is in the workspace, exact restores, a
journaled restore that a kill -9 cannot leave half-done, and the user's .git left alone."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiller.protocol import Thinking
from tiller.workspace.checkpoints import shadow_repo as checkpoints
from tiller.workspace.checkpoints.rewind import CheckpointKeeper
from tiller.workspace.checkpoints.shadow_repo import CheckpointError, ShadowRepo
from tiller.workspace.roots import WorkspaceRoots
from tiller.workspace.store import CheckpointTable, SessionRow, SessionStore


def digest(root: Path) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/") or "/.git/" in rel or rel.endswith("/.git"):
            continue
        if path.is_symlink():
            found[rel] = ("link", os.readlink(path))
        elif path.is_file():
            mode = oct(os.lstat(path).st_mode & 0o777)
            found[rel] = (mode, hashlib.sha256(path.read_bytes()).hexdigest())
    return found


def make_repo(tmp_path: Path) -> tuple[ShadowRepo, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ShadowRepo(tmp_path / "data" / "shadow.git", ws), ws


def test_snapshot_and_restore_are_exact_for_modes_symlinks_and_nested_repos(
    tmp_path: Path,
) -> None:
    repo, ws = make_repo(tmp_path)
    (ws / "a.txt").write_bytes(b"a\x00binary\xff")
    (ws / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(ws / "run.sh", 0o755)
    os.symlink("a.txt", ws / "link")
    (ws / "sub").mkdir()
    subprocess.run(["git", "init", "-q", str(ws / "sub")], check=True)
    (ws / "sub" / "inner.txt").write_text("inner")
    (ws / ".gitignore").write_text("*.log\n")
    (ws / "noise.log").write_text("ignored")
    first = repo.snapshot("first")
    wanted = digest(ws)
    (ws / "a.txt").write_text("changed")
    os.chmod(ws / "run.sh", 0o644)
    os.unlink(ws / "link")
    os.symlink("run.sh", ws / "link")
    (ws / "sub" / "inner.txt").unlink()
    (ws / "sub" / "new.txt").write_text("new")
    (ws / "noise.log").write_text("still ignored")
    changes = repo.restore(first.commit)
    after = digest(ws)
    assert after.pop("noise.log") == digest(ws)["noise.log"]  # ignored: left as it is
    assert after == {k: v for k, v in wanted.items() if k != "noise.log"}
    assert "sub/new.txt" in changes.added and "sub/inner.txt" in changes.removed
    assert (ws / "sub" / ".git").is_dir()
    assert not (ws / ".git").exists()  # the shadow repository lives elsewhere


def test_an_incremental_snapshot_only_hashes_changed_files(tmp_path: Path) -> None:
    repo, ws = make_repo(tmp_path)
    for n in range(50):
        (ws / f"f{n}.txt").write_text(f"{n}\n")
        os.utime(ws / f"f{n}.txt", (time.time() - 3600,) * 2)  # long since written
    repo.snapshot("one")
    hashed: list[int] = []
    original = repo._hash_files

    def counting(paths: Sequence[str]) -> list[str | None]:
        hashed.append(len(paths))
        return original(paths)

    repo._hash_files = counting  # type: ignore[method-assign]
    (ws / "f3.txt").write_text("changed\n")
    repo.snapshot("two")
    assert hashed == [1]


def test_a_restore_cut_by_kill_9_is_completed_by_the_next_call(tmp_path: Path) -> None:
    repo, ws = make_repo(tmp_path)
    for n in range(3000):
        (ws / f"file{n:04}.txt").write_text(f"original {n}\n" * 20)
    target = repo.snapshot("target").commit
    wanted = digest(ws)
    for n in range(3000):
        (ws / f"file{n:04}.txt").write_text(f"agent wrote {n}\n")
    (ws / "extra.txt").write_text("made later")
    code = (
        "import sys; from pathlib import Path; "
        "from tiller.workspace.checkpoints.shadow_repo import ShadowRepo; "
        f"ShadowRepo(Path({str(repo.git_dir)!r}), Path({str(ws)!r})).restore({target!r})"
    )
    child = subprocess.Popen([sys.executable, "-c", code])
    journal = repo.git_dir / "tiller-restore.journal"
    deadline = time.monotonic() + 30
    while not journal.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert repo.finish_interrupted_restore() in (target, None)
    assert digest(ws) == wanted
    assert not journal.exists()


# --- confinement: a restore never writes outside the workspace ------------------------------

TARGET_FILES = {"a.txt": b"a\n", "d/c.txt": b"c\n", "d/e/f.txt": b"f\n", "run.sh": b"#!/bin/sh\n"}
PLANT_AT = (
    "a.txt", "run.sh", "d", "d/c.txt", "d/e", "d/e/f.txt", "new.txt", "d/new.txt",
    ".a.txt.tiller-restore", ".run.sh.tiller-restore", "d/.c.txt.tiller-restore",
    "d/e/.f.txt.tiller-restore", ".d.tiller-restore",
)  # fmt: skip
OUTSIDE = ("victim.txt", "dir", "dir/inner.txt", "missing")

plants = st.lists(
    st.tuples(
        st.sampled_from(("symlink", "hardlink", "write", "delete")),
        st.sampled_from(PLANT_AT),
        st.sampled_from(OUTSIDE),
    ),
    max_size=8,
)


def plant(ws: Path, outside: Path, kind: str, name: str, to: str) -> None:
    """Put a trap at ``name`` (never touching anything outside the workspace to do it)."""
    path = ws / name
    parent = path.parent
    while parent != ws:  # through a planted link or a file: not a place to plant
        if parent.is_symlink() or (parent.exists() and not parent.is_dir()):
            return
        parent = parent.parent
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    match kind:
        case "symlink":
            os.symlink(outside / to, path)
        case "hardlink" if (outside / to).is_file():
            os.link(outside / to, path)
        case "write":
            path.write_text("changed by the agent\n")
        case _:
            pass


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plants, plants)
def test_a_restore_never_changes_anything_outside_the_workspace(
    shipped: list[tuple[str, str, str]], later: list[tuple[str, str, str]]
) -> None:
    """Symbolic links and hard links to places outside, planted anywhere (at the names the
    restore once used for its temporary files too), some shipped with the repository (in the
    snapshot rewound to), some made later by the agent; then a rewind: the outside is
    untouched and the workspace is exactly the snapshot again."""
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        outside = base / "outside"
        (outside / "dir").mkdir(parents=True)
        (outside / "victim.txt").write_text("victim\n")
        (outside / "dir" / "inner.txt").write_text("inner\n")
        repo, ws = make_repo(base)
        for name, data in TARGET_FILES.items():
            (ws / name).parent.mkdir(parents=True, exist_ok=True)
            (ws / name).write_bytes(data)
        os.chmod(ws / "run.sh", 0o755)
        for kind, name, to in shipped:
            plant(ws, outside, kind, name, to)
        target = repo.snapshot("target").commit
        wanted, untouched = digest(ws), digest(outside)
        for kind, name, to in later:
            plant(ws, outside, kind, name, to)
        repo.restore(target)
        assert digest(outside) == untouched
        assert digest(ws) == wanted


def test_a_restore_writes_through_no_planted_temp_name(tmp_path: Path) -> None:
    """The attack of the report, exactly: ``.a.txt.tiller-restore`` links to a file outside."""
    repo, ws = make_repo(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("victim\n")
    (ws / "a.txt").write_text("old\n")
    os.symlink(victim, ws / ".a.txt.tiller-restore")
    target = repo.snapshot("target").commit
    (ws / "a.txt").write_text("new\n")
    repo.restore(target)
    assert victim.read_text() == "victim\n"
    assert (ws / "a.txt").read_text() == "old\n" and not (ws / "a.txt").is_symlink()
    assert os.readlink(ws / ".a.txt.tiller-restore") == str(victim)


# --- private places: the data dir and the shadow repository ---------------------------------


def test_a_data_dir_inside_the_workspace_is_never_snapshotted_nor_restored(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "home"
    data = ws / ".local" / "share" / "tiller"
    repo = ShadowRepo(data / "checkpoints" / "home.git", ws, private=(data,))
    ws.mkdir()
    (ws / "notes.txt").write_text("v1\n")
    first = repo.snapshot("first").commit
    (data / "sessions.sqlite3").write_bytes(b"database")
    (ws / "notes.txt").write_text("v2\n")
    second = repo.snapshot("second").commit
    assert set(repo.tree(second)) == {"notes.txt"}
    assert repo.changes(second, first).changed == ("notes.txt",)
    objects = {p for p in (repo.git_dir / "objects").rglob("*") if p.is_file()}
    repo.restore(first)
    assert (ws / "notes.txt").read_text() == "v1\n"
    assert (data / "sessions.sqlite3").read_bytes() == b"database"
    assert objects <= {p for p in (repo.git_dir / "objects").rglob("*") if p.is_file()}


def test_a_snapshot_that_holds_the_data_dir_is_restored_without_touching_it(
    tmp_path: Path,
) -> None:
    """Snapshots taken before the data dir was kept out hold it: restoring one leaves the
    data dir (and the shadow repository in it) as it is."""
    ws = tmp_path / "home"
    data = ws / "data"
    old = ShadowRepo(data / "home.git", ws)  # as before: nothing private but the repo
    ws.mkdir()
    (ws / "a.txt").write_text("a1\n")
    data.mkdir()
    (data / "sessions.sqlite3").write_bytes(b"old database")
    target = old.snapshot("with the data dir").commit
    assert "data/sessions.sqlite3" in old.tree(target)
    (data / "sessions.sqlite3").write_bytes(b"new database")
    (ws / "a.txt").write_text("a2\n")
    now = ShadowRepo(data / "home.git", ws, private=(data,))
    changes = now.restore(target)
    assert changes.changed == ("a.txt",) and not changes.added and not changes.removed
    assert (data / "sessions.sqlite3").read_bytes() == b"new database"


def test_a_journal_whose_snapshot_is_gone_is_dropped_with_an_error(tmp_path: Path) -> None:
    repo, ws = make_repo(tmp_path)
    (ws / "a.txt").write_text("a\n")
    repo.snapshot("one")
    repo.journal_path.write_text("0123456789abcdef0123456789abcdef01234567")
    with pytest.raises(CheckpointError, match="no longer in the shadow repository"):
        repo.finish_interrupted_restore()
    assert not repo.restore_pending()
    assert repo.finish_interrupted_restore() is None


# --- housekeeping ---------------------------------------------------------------------------


async def test_housekeeping_keeps_only_this_workspaces_commits_when_several_exist(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 17: the live commits of every workspace were applied to one shadow repository,
    so ``update-ref`` failed on commits it does not hold and gc never ran."""
    store = SessionStore(tmp_path / "data" / "sessions.sqlite3")
    keepers: list[CheckpointKeeper] = []
    for name in ("one", "two"):
        ws = tmp_path / name
        ws.mkdir()
        (ws / "f.txt").write_text(name)
        keeper = CheckpointKeeper.open(
            tmp_path / "data", WorkspaceRoots.of(ws), store, retention_days=30
        )
        assert keeper is not None
        store.create(
            SessionRow(f"ses_{name}", str(ws), name, None, time.time(), time.time(),
                       "claude-test-1", "default", Thinking(), (), 0)
        )  # fmt: skip
        await keeper.before_turn(f"ses_{name}", f"turn_{name}", "hello")
        keeper.after_turn(f"ses_{name}", f"turn_{name}")
        await keeper.settled()
        keepers.append(keeper)
    one, _ = keepers
    assert isinstance(one.repo, ShadowRepo)
    table = CheckpointTable(store)
    mine = table.live_commits(str(tmp_path / "one"))
    assert len(mine) == 2 and mine.isdisjoint(table.live_commits(str(tmp_path / "two")))
    with caplog.at_level(logging.WARNING, logger="tiller.workspace.checkpoints.rewind"):
        await one.housekeeping()
    assert not [r for r in caplog.records if "housekeeping failed" in r.getMessage()]
    kept = await asyncio.to_thread(keep_refs, one.repo.git_dir)
    assert kept == mine


async def keeper_with_a_turn(root: Path, retention_days: int = 30) -> CheckpointKeeper:
    """A keeper of ``root/ws`` whose session took one turn (two snapshots, loose objects)."""
    store = SessionStore(root / "data" / "sessions.sqlite3")
    ws = root / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("one")
    keeper = CheckpointKeeper.open(root / "data", WorkspaceRoots.of(ws), store, retention_days)
    assert keeper is not None
    store.create(
        SessionRow("ses_1", str(ws), "one", None, time.time(), time.time(),
                   "claude-test-1", "default", Thinking(), (), 0)
    )  # fmt: skip
    await keeper.before_turn("ses_1", "turn_1", "hello")
    (ws / "f.txt").write_text("two")
    keeper.after_turn("ses_1", "turn_1")
    await keeper.settled()
    return keeper


def packed(git_dir: Path) -> bool:
    """Whether gc ran: it packs what is kept into a pack file."""
    return any((git_dir / "objects" / "pack").glob("*.pack"))


async def test_housekeeping_keeps_the_sessions_commits_and_runs_no_gc_without_work(
    tmp_path: Path,
) -> None:
    """A full gc repacks every object: a server start ran one for each workspace, even on a
    repository just made. Now nothing is packed while nothing was let go and few objects
    are loose."""
    keeper = await keeper_with_a_turn(tmp_path)
    assert isinstance(keeper.repo, ShadowRepo)
    await keeper.housekeeping()
    assert keep_refs(keeper.repo.git_dir) == keeper.table.live_commits(str(tmp_path / "ws"))
    assert not packed(keeper.repo.git_dir)


async def test_housekeeping_packs_once_enough_objects_are_loose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keeper = await keeper_with_a_turn(tmp_path)
    assert isinstance(keeper.repo, ShadowRepo)
    monkeypatch.setattr(checkpoints, "GC_LOOSE_OBJECTS", keeper.repo.loose_objects())
    await keeper.housekeeping()
    assert packed(keeper.repo.git_dir)


async def test_a_checkpoint_past_its_retention_is_let_go_and_collected(tmp_path: Path) -> None:
    keeper = await keeper_with_a_turn(tmp_path)
    assert isinstance(keeper.repo, ShadowRepo)
    await keeper.before_turn("ses_1", "turn_2", "again")
    keeper.after_turn("ses_1", "turn_2")
    await keeper.settled()
    await keeper.housekeeping()
    assert len(keep_refs(keeper.repo.git_dir)) == 4 and not packed(keeper.repo.git_dir)
    old = time.time() - 31 * 86400
    keeper.table.db.execute(
        "UPDATE checkpoints SET created_at = ? WHERE turn_id = ?", (old, "turn_1")
    )
    await keeper.housekeeping()
    kept = keep_refs(keeper.repo.git_dir)
    assert kept == keeper.table.live_commits(str(tmp_path / "ws")) and len(kept) == 2
    assert packed(keeper.repo.git_dir)


async def test_a_turns_snapshots_read_its_own_checkpoint_row_not_the_sessions_every_row(
    tmp_path: Path,
) -> None:
    """Issue 36: ``before_writes`` and the closing snapshot each loaded every checkpoint row of
    the session to find the turn's, so a turn's work grew with the session's length."""
    keeper = await keeper_with_a_turn(tmp_path)
    for n in range(300):  # a long session's earlier turns
        keeper.table.db.execute(
            "INSERT INTO checkpoints VALUES (?,?,?,?,?,?,?,?)",
            ("ses_1", f"old_{n}", "p", time.time() - 1000 + n, "c0", "c1", 1, "[]"),
        )
    statements: list[str] = []
    keeper.table.db.set_trace_callback(statements.append)
    await keeper.before_turn("ses_1", "turn_2", "again")
    await keeper.before_writes("ses_1", "turn_2")
    (tmp_path / "ws" / "f.txt").write_text("three")  # the turn's write
    keeper.after_turn("ses_1", "turn_2")
    await keeper.settled()
    keeper.table.db.set_trace_callback(None)
    row = keeper.table.of_turn("ses_1", "turn_2")
    assert row is not None and row.after is not None and row.changed_files == 1
    assert keeper.table.of_turn("ses_1", "turn_none") is None
    whole = [s for s in statements if "FROM checkpoints" in s and "turn_id" not in s]
    assert whole == [], whole


def keep_refs(git_dir: Path) -> set[str]:
    """The commits the refs that keep commits alive through gc point at."""
    listed = subprocess.run(
        ["git", "--git-dir", str(git_dir), "for-each-ref", "--format=%(objectname)",
         "refs/tiller/keep/"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return set(listed.stdout.split())
