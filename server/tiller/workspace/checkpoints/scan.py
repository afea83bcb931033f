"""What a snapshot holds: the workspace listed the way git would track it, and each file's
blob, hashed only when it may have changed since the last snapshot.

The listing runs ``git ls-files --others --exclude-standard`` against an empty index (so
``.gitignore`` files, the user's ``.git/info/exclude`` and a root ``.tillerignore`` apply) and
descends into nested repositories itself (they are snapshotted as plain files, never as
submodules). The private places (the shadow repository, the data dir) are never walked.

A full scan lists every file and hashes those whose stat (mtime, ctime, size, inode, mode)
changed since it was cached; a stat taken less than ``RACY_NS`` after the file's mtime is
not trusted next time (a write in the same timestamp tick, of the same size, would
leave it unchanged: git's "racy clean" entries), so such a file is hashed again. The stat
cache is kept in the shadow repository, so a new process starts warm.

With a ``FolderWatch`` (Linux), a full scan watches every folder it may list files from, and
the scans that follow look only at the files the kernel said changed: those are hashed
whatever their stat says. Whenever the watch cannot tell, the next scan is a full one.

Everything here is blocking: callers run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tiller.workspace.checkpoints.git import Entry, ShadowGit
from tiller.workspace.checkpoints.watch import FolderWatch

# workspace paths -> their blob ids, in order (None: no regular file there any more)
HashFiles = Callable[[Sequence[str]], list[str | None]]
HashLink = Callable[[bytes], str]  # a symbolic link's target -> its blob id
RACY_NS = 2_000_000_000  # coarser than any file system's timestamp tick
MAX_NEW_PATHS = 500  # more files new since the last scan: list everything again
_Stat = tuple[int, int, int, int, int, str]  # mtime, ctime, size, inode, mode; blob


def _literal(path: str) -> str:
    """``path`` as a gitignore pattern that matches only itself."""
    return "".join(f"\\{c}" if c in "\\*?[]!# " else c for c in path)


def within(path: str, places: Iterable[str]) -> bool:
    """``path`` is one of ``places`` or lies beneath one."""
    return any(path == p or path.startswith(f"{p}/") for p in places)


@dataclass
class Listing:
    """What the last scan found, for the watched scans that follow it. Mutable."""

    entries: dict[str, Entry]
    skipped: set[str]
    nested: tuple[str, ...]  # nested repositories (their files follow their own ignores)


@dataclass
class WorkspaceScan:
    """The workspace's files as the next snapshot holds them. Mutable: it caches file stats
    between snapshots, and with a ``watch`` the last listing (the reason an incremental
    snapshot costs milliseconds)."""

    git: ShadowGit
    hash_link: HashLink
    watch: FolderWatch | None = None
    _stats: dict[str, _Stat] = field(default_factory=dict)
    _loaded: bool = False
    _last: Listing | None = None  # trusted only while the watch can tell every change

    def scan(
        self, private: tuple[str, ...], max_file_bytes: int, hash_files: HashFiles
    ) -> tuple[dict[str, Entry], list[str]]:
        """Every file to snapshot with its entry, and the files skipped (over
        ``max_file_bytes``). Files that may have changed are hashed with ``hash_files``."""
        self._load()
        if self.watch is not None and self._last is not None:
            drained = self.watch.drain()
            if not drained.lost:
                found = self._watched(drained.paths, private, max_file_bytes, hash_files)
                if found is not None:
                    return found
        return self._full(private, max_file_bytes, hash_files)

    def forget(self, paths: Iterable[str] | None = None) -> None:
        """Drop the cached stats of ``paths`` (all when None): they are hashed anew."""
        if paths is None:
            self._stats.clear()
        else:
            for path in paths:
                self._stats.pop(path, None)
        self._last = None
        self.save()

    # --- the full scan --------------------------------------------------------------------

    def _full(
        self, private: tuple[str, ...], max_file_bytes: int, hash_files: HashFiles
    ) -> tuple[dict[str, Entry], list[str]]:
        started = time.time_ns()
        self._last = None
        watched = self.watch is not None and self.watch.watch(self._folders(private))
        entries: dict[str, Entry] = {}
        skipped: list[str] = []
        to_hash: list[str] = []
        nested: list[str] = []
        for path in self._listed(private, nested):
            cached = self._stats.get(path)
            found = self._look(path, max_file_bytes, cached, started)
            if found is None:
                continue
            if found == "skipped":
                skipped.append(path)
            elif isinstance(found, Entry):
                entries[path] = found
            else:
                to_hash.append(path)
        self._hash(to_hash, entries, hash_files, started)
        if watched:
            self._last = Listing(dict(entries), set(skipped), tuple(nested))
        self._stats = {p: s for p, s in self._stats.items() if p in entries}
        self.save()
        return entries, skipped

    def _look(
        self, path: str, max_file_bytes: int, cached: _Stat | None, started: int
    ) -> Entry | str | None:
        """``path``'s entry when its cached stat still holds; "hash" when it must be
        hashed; "skipped" (too big); None when it is no file to snapshot. A link is read
        at once."""
        where = f"{self.git.workspace}/{path}"  # (a Path per file costs more than the lstat)
        try:
            st = os.lstat(where)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            with contextlib.suppress(OSError):
                target = os.readlink(where)
                return Entry("120000", self.hash_link(os.fsencode(target)))
            return None
        if not stat.S_ISREG(st.st_mode):
            return None  # FIFOs, sockets, devices: not content
        if st.st_size > max_file_bytes:
            return "skipped"
        mode = "100755" if st.st_mode & 0o111 else "100644"
        key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)
        if cached is not None and cached[:5] == key:
            return Entry(mode, cached[5])
        self._stats[path] = (*key, "")  # the blob comes with the hash
        return "hash"

    def _hash(
        self, paths: list[str], entries: dict[str, Entry], hash_files: HashFiles, started: int
    ) -> None:
        """Hash ``paths`` into ``entries`` and cache their stats (racy ones never match)."""
        for path, blob in zip(paths, hash_files(paths), strict=True):
            key = self._stats.pop(path, None)
            if blob is None or key is None:
                continue  # gone (or no file) since it was listed
            mode = "100755" if key[4] & 0o111 else "100644"
            entries[path] = Entry(mode, blob)
            racy = key[0] >= started - RACY_NS
            self._stats[path] = (-1 if racy else key[0], *key[1:5], blob)

    # --- the watched scan -----------------------------------------------------------------

    def _watched(
        self,
        paths: frozenset[str],
        private: tuple[str, ...],
        max_file_bytes: int,
        hash_files: HashFiles,
    ) -> tuple[dict[str, Entry], list[str]] | None:
        """The last listing with ``paths`` looked at again; None when only a full scan can
        say (too many new files, or new ones in a nested repository)."""
        last = self._last
        assert last is not None
        started = time.time_ns()
        entries, skipped = dict(last.entries), set(last.skipped)
        known = [p for p in paths if p in entries or p in skipped]
        new = [p for p in paths if p not in entries and p not in skipped]
        new = [p for p in new if not within(p, private) and os.path.lexists(self.git.workspace / p)]
        if len(new) > MAX_NEW_PATHS or any(within(p, last.nested) for p in new):
            return None
        listed = list(self._listed(private, [], only=new)) if new else []
        to_hash: list[str] = []
        for path in (*known, *listed):
            entries.pop(path, None)
            skipped.discard(path)
            self._stats.pop(path, None)  # the kernel said it changed: hash it, whatever its stat
            found = self._look(path, max_file_bytes, None, started)
            if found == "skipped":
                skipped.add(path)
            elif isinstance(found, Entry):
                entries[path] = found
            elif found == "hash":
                to_hash.append(path)
        self._hash(to_hash, entries, hash_files, started)
        self._last = Listing(entries, skipped, last.nested)
        return dict(entries), sorted(skipped)

    # --- listing --------------------------------------------------------------------------

    def _folders(self, private: tuple[str, ...]) -> Iterator[str]:
        """Every folder files may be listed from (workspace paths, "" the root): all but
        ``.git`` folders, the private places and the folders git ignores; and the root's
        ``.git/info`` (its exclude file)."""
        workspace = self.git.workspace
        ignored = {p.rstrip("/") for p in self._run_listing("", private, ignored=True)}
        if (workspace / ".git" / "info").is_dir():
            yield ".git/info"
        pending = [""]
        while pending:
            folder = pending.pop()
            yield folder
            with contextlib.suppress(OSError), os.scandir(workspace / folder) as found:
                for entry in found:
                    path = f"{folder}/{entry.name}" if folder else entry.name
                    if entry.name == ".git" or path in ignored or within(path, private):
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(path)

    def _listed(
        self, private: tuple[str, ...], nested: list[str], only: Sequence[str] = ()
    ) -> Iterator[str]:
        """Workspace files git would not ignore, nested repositories descended into (and
        added to ``nested``); only those among ``only`` when it is given."""
        pending = [""]
        while pending:
            prefix = pending.pop()
            for name in self._run_listing(prefix, private, only=only):
                path = prefix + name
                if within(path.rstrip("/"), private):
                    continue
                if name.endswith("/"):  # a nested repository: its files are ours to keep
                    if not only:
                        nested.append(path.rstrip("/"))
                        pending.append(path)
                elif not name.startswith(".git/") and "/.git/" not in name:
                    yield path

    def _run_listing(
        self, prefix: str, private: tuple[str, ...], ignored: bool = False, only: Sequence[str] = ()
    ) -> Iterator[str]:
        """``git ls-files --others`` in the folder ``prefix`` (the ignored ones with
        ``ignored``, as folders where a whole folder is), names relative to it."""
        workspace = self.git.workspace
        empty = self.git.git_dir / "tiller-empty-index"
        excludes = [
            f"--exclude-from={p}"
            for p in (workspace / ".git" / "info" / "exclude", workspace / ".tillerignore")
            if p.is_file()
        ]
        with contextlib.suppress(FileNotFoundError):
            empty.unlink()
        skip = [  # git never even walks them
            f"--exclude=/{_literal(p[len(prefix) :])}/" for p in private if p.startswith(prefix)
        ]
        mode = ["--ignored", "--directory"] if ignored else []
        spec = ["--", *(f":(literal){p}" for p in only)] if only else []
        out = self.git.run(
            "ls-files", "-z", "--others", "--exclude-standard", *mode, *excludes, *skip, *spec,
            index=empty, work_tree=workspace / prefix if prefix else workspace,
        )  # fmt: skip
        for raw in out.split(b"\0"):
            if raw:
                yield raw.decode("utf-8", errors="surrogateescape")

    # --- the stat cache, kept in the shadow repository ----------------------------------------

    def _stats_file(self) -> Path:
        return self.git.git_dir / "tiller-stats.json"

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            raw = json.loads(self._stats_file().read_text("utf-8"))
            self._stats = {
                k: (int(v[0]), int(v[1]), int(v[2]), int(v[3]), int(v[4]), str(v[5]))
                for k, v in raw.items()
                if isinstance(v, list) and len(v) == 6
            }

    def save(self) -> None:
        partial = self._stats_file().with_suffix(".partial")
        partial.write_text(json.dumps(self._stats, separators=(",", ":")), "utf-8")
        os.replace(partial, self._stats_file())

    def close(self) -> None:
        """Stop watching (the next scan is a full one)."""
        if self.watch is not None:
            self.watch.close()
            self.watch = None
        self._last = None
