"""Workspace checkpoints in a shadow git repository, so any turn can be undone whatever wrote
the files (the agent's edit tools or its shell commands).

The shadow repository lives under ``dataDir`` (one per workspace); git runs with ``GIT_DIR``
there and the workspace as work tree, so the user's own ``.git`` is never read or written.
A snapshot lists the workspace with ``git ls-files --others --exclude-standard`` against an
empty index (so ``.gitignore`` files, the user's ``.git/info/exclude`` and a root
``.tillerignore`` apply), descends into nested repositories itself (they are snapshotted as
plain files, never as submodules), hashes only files whose stat changed since the last
snapshot, and writes the tree through an index of its own (``update-index --index-info``).
The data dir and the shadow repository are never part of a snapshot, wherever they sit (a
workspace that is ``$HOME`` holds the default data dir).

Restoring writes blobs back byte for byte with their modes; a journal makes a restore cut by
``kill -9`` finish on the next call. Every restore write is confined to the workspace: names
are reached by directory descriptor from the workspace root without following links, new
content goes to a temporary file created exclusively under a fresh name, and the rename stays
inside the directory it was created in.

Everything here is blocking: callers run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import secrets
import shutil
import stat
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .errors import TillerError
from .tools.confined import OPEN_DIR, OPEN_ROOT, OPEN_TEMP

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


def _literal(path: str) -> str:
    """``path`` as a gitignore pattern that matches only itself."""
    return "".join(f"\\{c}" if c in "\\*?[]!# " else c for c in path)


def _within(path: str, places: Iterable[str]) -> bool:
    return any(path == p or path.startswith(f"{p}/") for p in places)


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
    private: tuple[Path, ...] = ()  # never snapshotted or restored (the data dir); git_dir too
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
        private = self.private_paths()
        pending = [""]
        while pending:
            prefix = pending.pop()
            root = self.workspace / prefix if prefix else self.workspace
            with contextlib.suppress(FileNotFoundError):
                empty.unlink()
            skip = [  # git never even walks them
                f"--exclude=/{_literal(p[len(prefix) :])}/" for p in private if p.startswith(prefix)
            ]
            out = self._git(
                "ls-files", "-z", "--others", "--exclude-standard", *excludes, *skip,
                index=empty, work_tree=root,
            )  # fmt: skip
            for raw in out.split(b"\0"):
                if not raw:
                    continue
                name = raw.decode("utf-8", errors="surrogateescape")
                path = prefix + name
                if _within(path.rstrip("/"), private):
                    continue
                if name.endswith("/"):  # a nested repository: its files are ours to keep
                    pending.append(path)
                elif not name.startswith(".git/") and "/.git/" not in name:
                    yield path

    def private_paths(self) -> tuple[str, ...]:
        """The shadow repository and the ``private`` places (the data dir) that lie inside
        the workspace, relative to its root: no snapshot holds them, no restore touches them."""
        root = os.path.realpath(self.workspace)
        found: list[str] = []
        for place in (self.git_dir, *self.private):
            relative = os.path.relpath(os.path.realpath(place), root)
            if relative not in (".", "..") and not relative.startswith("../"):
                found.append(relative)
        return tuple(found)

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
        """What differs between commit ``now`` and commit ``then``, from ``then``'s side.
        Private places are left out (a snapshot from before they were kept out holds them)."""
        private = self.private_paths()
        a, b = self.tree(now), self.tree(then)
        if private:
            a = {p: e for p, e in a.items() if not _within(p, private)}
            b = {p: e for p, e in b.items() if not _within(p, private)}
        changed = sorted(p for p in a.keys() & b.keys() if a[p] != b[p])
        return Changes(
            tuple(changed), tuple(sorted(a.keys() - b.keys())), tuple(sorted(b.keys() - a.keys()))
        )

    # --- restore -------------------------------------------------------------------------

    @property
    def journal_path(self) -> Path:
        """Present while a restore is under way or was cut short; it names the target."""
        return self.git_dir / "tiller-restore.journal"

    def restore(self, target: str) -> Changes:
        """Make the workspace equal to snapshot ``target`` (files it does not hold and that
        git would track are removed). Journaled: a restore cut short is finished by
        ``finish_interrupted_restore`` or the next restore. Confined: see ``_Writer``."""
        journal = self.journal_path
        partial = journal.with_suffix(".partial")
        partial.write_text(target, "utf-8")
        os.replace(partial, journal)  # a journal is whole or absent, never empty
        now = self.snapshot("before restore").commit
        diff = self.changes(now, target)
        wanted = self.tree(target)
        with _Writer.at(self.workspace) as writer:
            for path in diff.added:
                writer.remove(path)
            self._write_blobs(writer, {p: wanted[p] for p in (*diff.changed, *diff.removed)})
        self._stats.clear()  # restored files have new stats: rehash on the next snapshot
        self._save_stats()
        journal.unlink()
        return diff

    def restore_pending(self) -> bool:
        """Whether a restore was cut short (by a crash or an error) and waits to be finished."""
        return self.journal_path.exists()

    def finish_interrupted_restore(self) -> str | None:
        """Complete a restore cut short; its target commit, or None when none was pending.
        A journal whose target is gone from the repository cannot be finished: it is dropped
        and CheckpointError says so."""
        journal = self.journal_path
        try:
            target = journal.read_text("utf-8").strip()
        except FileNotFoundError:
            return None
        if not target:  # never written so (the journal is renamed into place whole)
            journal.unlink(missing_ok=True)
            return None
        try:
            self._git("cat-file", "-e", f"{target}^{{commit}}")
        except CheckpointError:
            journal.unlink(missing_ok=True)
            raise CheckpointError(
                f"a restore cut short could not be finished: its snapshot {target[:12]} is no "
                "longer in the shadow repository, so the workspace may be partly restored"
            ) from None
        self.restore(target)
        return target

    def _write_blobs(self, writer: _Writer, wanted: Mapping[str, Entry]) -> None:
        if not wanted:
            return
        paths = sorted(wanted)
        request = "".join(f"{wanted[p].blob}\n" for p in paths).encode()
        out = self._git("cat-file", "--batch", stdin=request)
        offset = 0
        for path in paths:
            header_end = out.find(b"\n", offset)
            header = out[offset:header_end].split() if header_end >= 0 else []
            if len(header) != 3 or not header[2].isdigit():
                raise CheckpointError(
                    f"the snapshot's content of {path} is missing from the shadow repository"
                )
            size = int(header[2])
            data = out[header_end + 1 : header_end + 1 + size]
            offset = header_end + 1 + size + 1
            writer.put(path, wanted[path].mode, data)

    # --- housekeeping --------------------------------------------------------------------

    def keep_alive(self, commits: Iterable[str]) -> None:
        """Point refs at the commits still in use so ``gc`` keeps them (and drops others).
        Commits this repository does not hold are passed over: no ref can name them."""
        held = self._held_commits(sorted(set(commits)))
        lines = "".join(f"update refs/tiller/keep/{c} {c}\n" for c in held)
        existing = self._git("for-each-ref", "--format=%(refname)", "refs/tiller/keep/").decode()
        keep = {f"refs/tiller/keep/{c}" for c in held}
        drops = "".join(f"delete {r}\n" for r in existing.split() if r not in keep)
        if lines or drops:
            self._git("update-ref", "--stdin", stdin=(drops + lines).encode())

    def _held_commits(self, ids: Sequence[str]) -> list[str]:
        if not ids:
            return []
        out = self._git(
            "cat-file", "--batch-check=%(objectname) %(objecttype)",
            stdin="".join(f"{c}\n" for c in ids).encode(),
        )  # fmt: skip
        found = (line.split(" ") for line in out.decode().splitlines())
        return [parts[0] for parts in found if parts[-1] == "commit"]

    def gc(self) -> None:
        self._git("gc", "--quiet", "--prune=1.day.ago")

    def disk_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.git_dir.rglob("*") if p.is_file())


class _Writer:
    """A restore's writes, confined to the workspace by directory descriptor.

    Every name is reached from a descriptor of the workspace root, one directory at a time
    with ``O_DIRECTORY | O_NOFOLLOW``; where the snapshot has a directory and the workspace
    has something else (a file, a symbolic link planted to lead outside), that entry itself is
    removed and a directory made. New content goes to a temporary file created with
    ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a fresh random name (an entry planted at any name
    is never opened, let alone followed), and ``rename`` relative to that same directory
    descriptor puts it in place: it replaces the name (a symlink or a hard link there
    included), never what the name pointed at.
    """

    def __init__(self, root_fd: int) -> None:
        self.root_fd = root_fd

    @staticmethod
    @contextlib.contextmanager
    def at(workspace: Path) -> Iterator[_Writer]:
        root_fd = os.open(workspace, OPEN_ROOT)  # the root itself is trusted as configured
        try:
            yield _Writer(root_fd)
        finally:
            os.close(root_fd)

    def remove(self, path: str) -> None:
        """Unlink the file or link ``path``, then the directories it leaves empty. A path
        whose directories are gone, or are no longer directories, is not there any more."""
        *dirs, name = _parts(path)
        fds = [self.root_fd]
        try:
            for part in dirs:
                try:
                    fds.append(os.open(part, OPEN_DIR, dir_fd=fds[-1]))
                except OSError as exc:
                    if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                        return
                    raise
            try:
                os.unlink(name, dir_fd=fds[-1])
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    if exc.errno == errno.EISDIR:  # a directory meanwhile: not ours to drop
                        return
                    raise
            for depth in range(len(dirs) - 1, -1, -1):
                try:
                    os.rmdir(dirs[depth], dir_fd=fds[depth])
                except OSError:  # not empty (or changed): it stays, and so do its parents
                    return
        finally:
            for fd in fds[1:]:
                os.close(fd)

    def put(self, path: str, mode: str, data: bytes) -> None:
        """Make ``path`` a file with ``mode`` (``100644``, ``100755``) holding ``data``, or a
        symbolic link (``120000``) to ``data``."""
        *dirs, name = _parts(path)
        dir_fd = self._open_dirs(dirs)
        try:
            found = _lstat_at(dir_fd, name)
            if found is not None and stat.S_ISDIR(found.st_mode):
                shutil.rmtree(name, dir_fd=dir_fd)  # fd-based: never follows a link inside
            temp = _new_temp(dir_fd, mode, data)
            try:
                os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=dir_fd)
                raise
        finally:
            if dir_fd != self.root_fd:
                os.close(dir_fd)

    def _open_dirs(self, dirs: Sequence[str]) -> int:
        """The directory ``dirs`` beneath the root, opened; made a real directory on the way."""
        fd = self.root_fd
        try:
            for part in dirs:
                inner = _enter_dir(fd, part)
                if fd != self.root_fd:
                    os.close(fd)
                fd = inner
        except BaseException:
            if fd != self.root_fd:
                os.close(fd)
            raise
        return fd


def _parts(path: str) -> list[str]:
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise CheckpointError(f"refusing to restore {path!r}: not a plain path in the workspace")
    return parts


def _lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _enter_dir(here: int, part: str) -> int:
    """The directory ``part`` of ``here`` opened without following a link; whatever else is
    there (a file, a symbolic link) is removed and a directory made in its place."""
    for _ in range(5):  # a concurrent change may need another try
        try:
            return os.open(part, OPEN_DIR, dir_fd=here)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=here)
        except OSError as exc:
            if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            try:
                os.unlink(part, dir_fd=here)  # the link itself, never its target
            except OSError as gone:
                if gone.errno not in (errno.ENOENT, errno.EISDIR):
                    raise
    raise CheckpointError(f"{part} kept changing while the restore made it a directory")


def _new_temp(dir_fd: int, mode: str, data: bytes) -> str:
    """A new entry in ``dir_fd`` holding ``data`` (a file, or a symbolic link for mode
    ``120000``), created exclusively under a fresh name; its name."""
    for _ in range(5):
        temp = f".{secrets.token_hex(8)}.tiller-restore"
        try:
            if mode == "120000":
                os.symlink(data.decode("utf-8", "surrogateescape"), temp, dir_fd=dir_fd)
                return temp
            fd = os.open(temp, OPEN_TEMP, 0o600, dir_fd=dir_fd)
        except FileExistsError:
            continue
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, 0o755 if mode == "100755" else 0o644)
            finally:
                os.close(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
        return temp
    raise CheckpointError("the restore found no free name for a temporary file")


def now() -> float:
    return time.time()
