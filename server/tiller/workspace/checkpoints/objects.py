"""Git objects written straight into the shadow repository, without a git process: the blobs
of changed files, the trees of the folders they sit in, and the snapshot's commit.

A snapshot changes a few files in a workspace of thousands: ``TreeCache`` keeps every folder's
entries and tree id between snapshots and writes only the trees on the way from a changed
file to the root. Objects are written loose in git's own format (``objects/xx/yyyy``, zlib,
named by their SHA-1), exactly as ``git hash-object -w`` and ``git write-tree`` would, so git
reads them, packs them and prunes them as its own.

Everything here is blocking: callers run it in a worker thread.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
import time
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tiller.workspace.checkpoints.git import CheckpointError, Entry

TREE_MODE = "40000"
_IDENTITY = b"tiller <tiller@localhost>"
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


@dataclass
class ObjectWriter:
    """Writes loose objects into ``git_dir``. Mutable: it remembers the ids it wrote (or
    found), so a tree reused by the next snapshot costs no look-up."""

    git_dir: Path
    _known: set[str] = field(default_factory=set)

    def put(self, kind: bytes, data: bytes) -> str:
        """Store an object (``blob``, ``tree``, ``commit``); its id."""
        raw = b"%s %d\0%s" % (kind, len(data), data)
        oid = hashlib.sha1(raw, usedforsecurity=False).hexdigest()
        if oid in self._known:
            return oid
        folder = self.git_dir / "objects" / oid[:2]
        target = folder / oid[2:]
        if not target.exists():
            folder.mkdir(exist_ok=True)
            partial = folder / f"tmp_obj_{secrets.token_hex(6)}"
            partial.write_bytes(zlib.compress(raw, 1))  # git's core.looseCompression default
            os.chmod(partial, 0o444)
            os.replace(partial, target)  # same content under the same name: either is fine
        self._known.add(oid)
        return oid

    def blob_of(self, path: Path) -> str | None:
        """The blob of the regular file at ``path`` (never a FIFO or a device put there since
        it was listed: those would block the read), or None when it is no file any more."""
        try:
            fd = os.open(path, _READ_FLAGS)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            with os.fdopen(fd, "rb", closefd=False) as file:
                data = file.read()
        finally:
            os.close(fd)
        return self.put(b"blob", data)

    def commit(self, tree: str, message: str) -> str:
        when = b"%d +0000" % int(time.time())
        body = b"tree %s\nauthor %s %s\ncommitter %s %s\n\n%s\n" % (
            tree.encode(), _IDENTITY, when, _IDENTITY, when,
            message.encode("utf-8", "surrogateescape"),
        )  # fmt: skip
        return self.put(b"commit", body)

    def forget(self) -> None:
        """Ids written before may be gone (``gc`` pruned them): look again."""
        self._known.clear()


def _sort_key(item: tuple[str, Entry]) -> bytes:
    name, entry = item
    raw = name.encode("utf-8", "surrogateescape")
    return raw + b"/" if entry.mode == TREE_MODE else raw  # git's order for a folder's entries


@dataclass
class TreeCache:
    """Every folder's entries and tree id as of the last snapshot. Mutable."""

    objects: ObjectWriter
    _entries: dict[str, Entry] = field(default_factory=dict)  # the files it holds now
    _folders: dict[str, dict[str, Entry]] = field(default_factory=lambda: {"": {}})

    def root(self, entries: Mapping[str, Entry]) -> str:
        """The tree of ``entries`` (workspace path -> file entry); only folders whose
        content changed since the last call are written."""
        previous = self._entries
        changed = [p for p, e in entries.items() if previous.get(p) != e]
        gone = [p for p in previous if p not in entries]
        dirty: set[str] = {""}
        for path in gone:
            folder, _, name = path.rpartition("/")
            self._folders.get(folder, {}).pop(name, None)
            dirty.update(_ancestors(folder))
        for path in changed:
            folder, _, name = path.rpartition("/")
            self._folders.setdefault(folder, {})[name] = entries[path]
            dirty.update(_ancestors(folder))
        self._entries = dict(entries)
        return self._write(dirty)

    def reset(self) -> None:
        """Forget every folder (the next call writes each tree again)."""
        self._entries = {}
        self._folders = {"": {}}

    def _write(self, dirty: Iterable[str]) -> str:
        """Write the dirty folders' trees, deepest first; the root's id."""
        root = ""
        for folder in sorted(dirty, key=lambda f: -f.count("/") if f else 1):
            held = self._folders.get(folder, {})
            parent, _, name = folder.rpartition("/")
            if not held and folder:
                self._folders.pop(folder, None)  # empty: git has no empty folders
                siblings = self._folders.get(parent, {})
                if name in siblings and siblings[name].mode == TREE_MODE:
                    del siblings[name]  # (a file of that name may have taken its place)
                continue
            body = b"".join(
                b"%s %s\0%s" % (e.mode.encode(), n.encode("utf-8", "surrogateescape"),
                                bytes.fromhex(e.blob))
                for n, e in sorted(held.items(), key=_sort_key)
            )  # fmt: skip
            tree = self.objects.put(b"tree", body)
            if folder:
                self._folders.setdefault(parent, {})[name] = Entry(TREE_MODE, tree)
            else:
                root = tree
        if not root:
            raise CheckpointError("the snapshot's root tree was not written")
        return root


def _ancestors(folder: str) -> list[str]:
    """``folder`` and every folder above it, the root ("") last."""
    found = []
    while folder:
        found.append(folder)
        folder = folder.rpartition("/")[0]
    found.append("")
    return found
