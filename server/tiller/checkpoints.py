"""Workspace checkpoints in a shadow git repository, so any turn can be undone whatever wrote
the files (the agent's edit tools or its shell commands).

The shadow repository lives under ``dataDir`` (one per workspace); git runs with ``GIT_DIR``
there and the workspace as work tree, so the user's own ``.git`` is never read or written.
A snapshot lists the workspace with ``git ls-files --others --exclude-standard`` against an
empty index (so ``.gitignore`` files, the user's ``.git/info/exclude`` and a root
``.tillerignore`` apply), descends into nested repositories itself (they are snapshotted as
plain files, never as submodules), hashes only files whose stat changed since the last
snapshot, and writes the tree through an index of its own (``update-index --index-info``).
Restoring writes blobs back byte for byte with their modes; a journal makes a restore cut by
``kill -9`` finish on the next call.

Everything here is blocking: callers run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .errors import TillerError

MAX_FILE_BYTES = 10 * 1024 * 1024  # larger files are skipped (and listed)
ZERO_ID = "0" * 40
_IDENTITY = {
    "GIT_AUTHOR_NAME": "tiller",
    "GIT_AUTHOR_EMAIL": "tiller@localhost",
    "GIT_COMMITTER_NAME": "tiller",
    "GIT_COMMITTER_EMAIL": "tiller@localhost",
}


class CheckpointError(TillerError):
    def __init__(self, message: str) -> None:
        super().__init__(message, code="checkpoint")


class Entry(NamedTuple):
    """One file as git sees it: mode (``100644``, ``100755``, ``120000``) and blob id.
    (A named tuple: a snapshot makes and compares tens of thousands of them.)"""

    mode: str
    blob: str


@dataclass(frozen=True)
class Snapshot:
    commit: str
    skipped: tuple[str, ...] = ()  # over the size limit or unreadable


@dataclass(frozen=True)
class Changes:
    """How the workspace differs, as seen from the state a restore brings back."""

    changed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()  # present now, absent then: a restore removes them
    removed: tuple[str, ...] = ()  # absent now, present then: a restore puts them back

    @property
    def count(self) -> int:
        return len(self.changed) + len(self.added) + len(self.removed)

    def to_wire(self) -> dict[str, list[str]]:
        return {
            "changed": list(self.changed),
            "added": list(self.added),
            "removed": list(self.removed),
        }


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def git_available() -> bool:
    return shutil.which("git") is not None


def shadow_dir_for(data_dir: Path, workspace: Path) -> Path:
    key = hashlib.sha256(str(workspace).encode()).hexdigest()[:16]
    return data_dir / "checkpoints" / f"{workspace.name or 'root'}-{key}.git"


@dataclass
class ShadowRepo:
    """The shadow repository of one workspace. Mutable: it caches file stats between
    snapshots (the reason an incremental snapshot costs milliseconds)."""

    git_dir: Path
    workspace: Path
    max_file_bytes: int = MAX_FILE_BYTES
    _stats: dict[str, tuple[int, int, int, int, str]] = field(default_factory=dict)
    _loaded: bool = False
    _indexed: dict[str, Entry] | None = None  # what the index file holds (this process)
    _index_stamp: tuple[int, int, int] | None = None  # the index file as this process left it

    # --- plumbing ------------------------------------------------------------------------

    def _env(self, index: Path | None = None) -> dict[str, str]:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k == "GIT_EXEC_PATH"
        }
        env.update(_IDENTITY)
        env["GIT_DIR"] = str(self.git_dir)
        env["GIT_WORK_TREE"] = str(self.workspace)
        env["GIT_INDEX_FILE"] = str(index or self.git_dir / "tiller-index")
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        env["GIT_TERMINAL_PROMPT"] = "0"
        return env

    def _git(
        self,
        *args: str,
        stdin: bytes | None = None,
        index: Path | None = None,
        work_tree: Path | None = None,
    ) -> bytes:
        env = self._env(index)
        if work_tree is not None:
            env["GIT_WORK_TREE"] = str(work_tree)
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", *args],
            input=stdin,
            capture_output=True,
            env=env,
            cwd=self.workspace,
            check=False,
        )
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip()
            raise CheckpointError(f"git {args[0]} failed: {why}")
        return done.stdout

    def ensure(self) -> None:
        if (self.git_dir / "HEAD").exists():
            return
        self.git_dir.mkdir(parents=True, exist_ok=True)
        self._git("init", "--quiet")
        for key, value in (
            ("core.autocrlf", "false"),
            ("core.filemode", "true"),
            ("core.symlinks", "true"),
            ("gc.auto", "0"),  # gc runs in the background, between turns
            ("commit.gpgsign", "false"),
        ):
            self._git("config", key, value)

    # --- snapshot ------------------------------------------------------------------------

    def snapshot(self, message: str) -> Snapshot:
        """Record the workspace as it is now; returns the commit.

        The index of the shadow repository holds the previous snapshot, so only changed
        entries are written and ``write-tree`` reuses the cached trees of unchanged folders.
        """
        self.ensure()
        self._load_stats()
        entries, skipped = self._scan()
        index = self.git_dir / "tiller-index"
        if self._indexed is None or _stamp(index) != self._index_stamp:
            # A new process, or another one wrote the index: start it afresh.
            with contextlib.suppress(FileNotFoundError):
                index.unlink()
            self._indexed = {}
        previous = self._indexed
        lines = [f"0 {ZERO_ID}\t{path}" for path in previous.keys() - entries.keys()]
        lines += [
            f"{entry.mode} {entry.blob}\t{path}"
            for path, entry in entries.items()
            if previous.get(path) != entry
        ]
        if lines:
            self._indexed = None  # unknown until the update succeeds
            self._git(
                "update-index",
                "--index-info",
                stdin=("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"),
                index=index,
            )
            self._indexed = entries
            self._index_stamp = _stamp(index)
        if entries:
            tree = self._git("write-tree", index=index).decode().strip()
        else:
            tree = self._git("mktree", stdin=b"").decode().strip()  # the empty tree
        commit = self._git("commit-tree", tree, "-m", message).decode().strip()
        self._save_stats()
        return Snapshot(commit, tuple(skipped))

    def _listed(self) -> Iterator[str]:
        """Workspace files git would not ignore, nested repositories descended into."""
        empty = self.git_dir / "tiller-empty-index"
        excludes = [
            f"--exclude-from={p}"
            for p in (
                self.workspace / ".git" / "info" / "exclude",
                self.workspace / ".tillerignore",
            )
            if p.is_file()
        ]
        pending = [""]
        while pending:
            prefix = pending.pop()
            root = self.workspace / prefix if prefix else self.workspace
            with contextlib.suppress(FileNotFoundError):
                empty.unlink()
            out = self._git(
                "ls-files", "-z", "--others", "--exclude-standard", *excludes,
                index=empty, work_tree=root,
            )  # fmt: skip
            for raw in out.split(b"\0"):
                if not raw:
                    continue
                name = raw.decode("utf-8", errors="surrogateescape")
                path = prefix + name
                if name.endswith("/"):  # a nested repository: its files are ours to keep
                    pending.append(path)
                elif not name.startswith(".git/") and "/.git/" not in name:
                    yield path

    def _scan(self) -> tuple[dict[str, Entry], list[str]]:
        entries: dict[str, Entry] = {}
        skipped: list[str] = []
        to_hash: list[str] = []
        links: list[str] = []
        seen: dict[str, tuple[int, int, int, int]] = {}
        root = f"{self.workspace}/"
        for path in self._listed():
            try:
                st = os.lstat(root + path)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                mode = "120000"
            elif stat.S_ISREG(st.st_mode):
                if st.st_size > self.max_file_bytes:
                    skipped.append(path)
                    continue
                mode = "100755" if st.st_mode & 0o111 else "100644"
            else:
                continue  # FIFOs, sockets, devices: not content
            key = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)
            seen[path] = key
            cached = self._stats.get(path)
            if cached is not None and cached[:4] == key:
                entries[path] = Entry(mode, cached[4])
            elif mode == "120000":
                links.append(path)
            else:
                to_hash.append(path)
            entries.setdefault(path, Entry(mode, ""))
        for path, blob in zip(to_hash, self._hash_files(to_hash), strict=True):
            entries[path] = Entry(entries[path].mode, blob)
        for path in links:
            target = os.readlink(self.workspace / path).encode("utf-8", "surrogateescape")
            blob = self._git("hash-object", "-w", "--stdin", stdin=target).decode().strip()
            entries[path] = Entry("120000", blob)
        self._stats = {path: (*seen[path], entries[path].blob) for path in entries}
        return entries, skipped

    def _hash_files(self, paths: Sequence[str]) -> list[str]:
        if not paths:
            return []
        out = self._git(
            "hash-object", "-w", "--no-filters", "--stdin-paths",
            stdin=("\n".join(paths) + "\n").encode("utf-8", "surrogateescape"),
        )  # fmt: skip
        blobs = out.decode().split()
        if len(blobs) != len(paths):
            raise CheckpointError("git hash-object returned a short list")
        return blobs

    def _stats_file(self) -> Path:
        return self.git_dir / "tiller-stats.json"

    def _load_stats(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            raw = json.loads(self._stats_file().read_text("utf-8"))
            self._stats = {
                k: (int(v[0]), int(v[1]), int(v[2]), int(v[3]), str(v[4]))
                for k, v in raw.items()
                if isinstance(v, list) and len(v) == 5
            }

    def _save_stats(self) -> None:
        partial = self._stats_file().with_suffix(".partial")
        partial.write_text(json.dumps(self._stats, separators=(",", ":")), "utf-8")
        os.replace(partial, self._stats_file())

    # --- reading snapshots ---------------------------------------------------------------

    def tree(self, commit: str) -> dict[str, Entry]:
        out = self._git("ls-tree", "-r", "-z", "--full-tree", commit)
        entries: dict[str, Entry] = {}
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, name = record.partition(b"\t")
            mode, _kind, blob = meta.decode().split()
            entries[name.decode("utf-8", "surrogateescape")] = Entry(mode, blob)
        return entries

    def changes(self, now: str, then: str) -> Changes:
        """What differs between commit ``now`` and commit ``then``, from ``then``'s side."""
        a, b = self.tree(now), self.tree(then)
        changed = sorted(p for p in a.keys() & b.keys() if a[p] != b[p])
        return Changes(
            tuple(changed), tuple(sorted(a.keys() - b.keys())), tuple(sorted(b.keys() - a.keys()))
        )

    # --- restore -------------------------------------------------------------------------

    def _journal(self) -> Path:
        return self.git_dir / "tiller-restore.journal"

    def restore(self, target: str) -> Changes:
        """Make the workspace equal to snapshot ``target`` (files it does not hold and that
        git would track are removed). Journaled: a restore cut short is finished by
        ``finish_interrupted_restore`` or the next restore."""
        journal = self._journal()
        partial = journal.with_suffix(".partial")
        partial.write_text(target, "utf-8")
        os.replace(partial, journal)  # a journal is whole or absent, never empty
        now = self.snapshot("before restore").commit
        diff = self.changes(now, target)
        wanted = self.tree(target)
        for path in diff.added:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.workspace / path)
            self._prune_dirs(path)
        self._write_blobs({p: wanted[p] for p in (*diff.changed, *diff.removed)})
        self._stats.clear()  # restored files have new stats: rehash on the next snapshot
        self._save_stats()
        journal.unlink()
        return diff

    def finish_interrupted_restore(self) -> str | None:
        """Complete a restore cut by a crash; the target commit, or None when none was."""
        with contextlib.suppress(FileNotFoundError):
            target = self._journal().read_text("utf-8").strip()
            if target:
                self.restore(target)
                return target
        return None

    def _prune_dirs(self, path: str) -> None:
        parent = (self.workspace / path).parent
        while parent != self.workspace and self.workspace in parent.parents:
            try:
                parent.rmdir()
            except OSError:
                return
            parent = parent.parent

    def _write_blobs(self, wanted: Mapping[str, Entry]) -> None:
        if not wanted:
            return
        paths = sorted(wanted)
        request = "".join(f"{wanted[p].blob}\n" for p in paths).encode()
        out = self._git("cat-file", "--batch", stdin=request)
        offset = 0
        for path in paths:
            header_end = out.index(b"\n", offset)
            size = int(out[offset:header_end].split()[2])
            data = out[header_end + 1 : header_end + 1 + size]
            offset = header_end + 1 + size + 1
            self._put(path, wanted[path].mode, data)

    def _put(self, path: str, mode: str, data: bytes) -> None:
        target = self.workspace / path
        for parent in reversed(target.parents):
            if parent == self.workspace or self.workspace not in parent.parents:
                continue
            if parent.is_symlink() or (parent.exists() and not parent.is_dir()):
                parent.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink()
        if mode == "120000":
            os.symlink(data.decode("utf-8", "surrogateescape"), target)
            return
        partial = target.with_name(f".{target.name}.tiller-restore")
        permissions = 0o755 if mode == "100755" else 0o644
        with open(partial, "wb") as out:
            out.write(data)
            os.fchmod(out.fileno(), permissions)
        os.replace(partial, target)

    # --- housekeeping --------------------------------------------------------------------

    def keep_alive(self, commits: Iterable[str]) -> None:
        """Point refs at the commits still in use so ``gc`` keeps them (and drops others)."""
        lines = "".join(f"update refs/tiller/keep/{c} {c}\n" for c in commits)
        existing = self._git("for-each-ref", "--format=%(refname)", "refs/tiller/keep/").decode()
        keep = {f"refs/tiller/keep/{c}" for c in commits}
        drops = "".join(f"delete {r}\n" for r in existing.split() if r not in keep)
        if lines or drops:
            self._git("update-ref", "--stdin", stdin=(drops + lines).encode())

    def gc(self) -> None:
        self._git("gc", "--quiet", "--prune=1.day.ago")

    def disk_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.git_dir.rglob("*") if p.is_file())


def now() -> float:
    return time.time()
