"""The shadow repository: snapshots of whatever is in the workspace, exact restores, a
journaled restore that a kill -9 cannot leave half-done, and the user's .git left alone."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tiller.checkpoints import ShadowRepo


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
    repo.snapshot("one")
    hashed: list[int] = []
    original = repo._hash_files

    def counting(paths: list[str]) -> list[str]:
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
        "import sys; from pathlib import Path; from tiller.checkpoints import ShadowRepo; "
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
