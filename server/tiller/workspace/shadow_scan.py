"""What a snapshot holds: the workspace listed the way git would track it, and each file's
blob, hashed only when its stat changed since the last snapshot.

The listing runs ``git ls-files --others --exclude-standard`` against an empty index (so
``.gitignore`` files, the user's ``.git/info/exclude`` and a root ``.tillerignore`` apply) and
descends into nested repositories itself (they are snapshotted as plain files, never as
submodules). The private places (the shadow repository, the data dir) are never walked.
The stat cache is kept in the shadow repository, so a new process starts warm.

Everything here is blocking: callers run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tiller.workspace.shadow_git import Entry, ShadowGit

HashFiles = Callable[[Sequence[str]], list[str]]  # workspace paths -> their blob ids, in order


def _literal(path: str) -> str:
    """``path`` as a gitignore pattern that matches only itself."""
    return "".join(f"\\{c}" if c in "\\*?[]!# " else c for c in path)


def within(path: str, places: Iterable[str]) -> bool:
    """``path`` is one of ``places`` or lies beneath one."""
    return any(path == p or path.startswith(f"{p}/") for p in places)


@dataclass
class WorkspaceScan:
    """The workspace's files as the next snapshot holds them. Mutable: it caches file stats
    between snapshots (the reason an incremental snapshot costs milliseconds)."""

    git: ShadowGit
    _stats: dict[str, tuple[int, int, int, int, str]] = field(default_factory=dict)
    _loaded: bool = False

    def scan(
        self, private: tuple[str, ...], max_file_bytes: int, hash_files: HashFiles
    ) -> tuple[dict[str, Entry], list[str]]:
        """Every file to snapshot with its entry, and the files skipped (over
        ``max_file_bytes``). Files whose stat changed are hashed with ``hash_files``."""
        self._load()
        entries: dict[str, Entry] = {}
        skipped: list[str] = []
        to_hash: list[str] = []
        links: list[str] = []
        seen: dict[str, tuple[int, int, int, int]] = {}
        root = f"{self.git.workspace}/"
        for path in self._listed(private):
            try:
                st = os.lstat(root + path)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                mode = "120000"
            elif stat.S_ISREG(st.st_mode):
                if st.st_size > max_file_bytes:
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
        for path, blob in zip(to_hash, hash_files(to_hash), strict=True):
            entries[path] = Entry(entries[path].mode, blob)
        for path in links:
            target = os.readlink(self.git.workspace / path).encode("utf-8", "surrogateescape")
            blob = self.git.run("hash-object", "-w", "--stdin", stdin=target).decode().strip()
            entries[path] = Entry("120000", blob)
        self._stats = {path: (*seen[path], entries[path].blob) for path in entries}
        return entries, skipped

    def _listed(self, private: tuple[str, ...]) -> Iterator[str]:
        """Workspace files git would not ignore, nested repositories descended into."""
        workspace = self.git.workspace
        empty = self.git.git_dir / "tiller-empty-index"
        excludes = [
            f"--exclude-from={p}"
            for p in (workspace / ".git" / "info" / "exclude", workspace / ".tillerignore")
            if p.is_file()
        ]
        pending = [""]
        while pending:
            prefix = pending.pop()
            root = workspace / prefix if prefix else workspace
            with contextlib.suppress(FileNotFoundError):
                empty.unlink()
            skip = [  # git never even walks them
                f"--exclude=/{_literal(p[len(prefix) :])}/" for p in private if p.startswith(prefix)
            ]
            out = self.git.run(
                "ls-files", "-z", "--others", "--exclude-standard", *excludes, *skip,
                index=empty, work_tree=root,
            )  # fmt: skip
            for raw in out.split(b"\0"):
                if not raw:
                    continue
                name = raw.decode("utf-8", errors="surrogateescape")
                path = prefix + name
                if within(path.rstrip("/"), private):
                    continue
                if name.endswith("/"):  # a nested repository: its files are ours to keep
                    pending.append(path)
                elif not name.startswith(".git/") and "/.git/" not in name:
                    yield path

    # --- the stat cache, kept in the shadow repository ----------------------------------------

    def forget(self) -> None:
        """Drop every cached stat (files were rewritten): the next snapshot hashes anew."""
        self._stats.clear()
        self.save()

    def _stats_file(self) -> Path:
        return self.git.git_dir / "tiller-stats.json"

    def _load(self) -> None:
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

    def save(self) -> None:
        partial = self._stats_file().with_suffix(".partial")
        partial.write_text(json.dumps(self._stats, separators=(",", ":")), "utf-8")
        os.replace(partial, self._stats_file())
