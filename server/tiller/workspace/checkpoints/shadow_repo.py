"""Workspace checkpoints in a shadow git repository, so any turn can be undone whatever wrote
the files (the agent's edit tools or its shell commands).

The shadow repository lives under ``dataDir`` (one per workspace); git runs with ``GIT_DIR``
there and the workspace as work tree, so the user's own ``.git`` is never read or written
(``git``). A snapshot lists the workspace as git would track it and hashes only files
that may have changed since the last snapshot (``scan``; with a watch, only the files
the kernel said changed are looked at), then writes their blobs, the trees of their folders
and the commit straight into the repository (``objects``). The data dir and the shadow
repository are never part of a snapshot, wherever they sit (a workspace that is ``$HOME``
holds the default data dir).

Restoring writes blobs back byte for byte with their modes; a journal makes a restore cut by
``kill -9`` finish on the next call. Every restore write is confined to the workspace
(``writer``).

Everything here is blocking: callers run it in a worker thread.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tiller.workspace.checkpoints.git import CheckpointError, Entry, ShadowGit
from tiller.workspace.checkpoints.objects import ObjectWriter, TreeCache
from tiller.workspace.checkpoints.scan import WorkspaceScan, within
from tiller.workspace.checkpoints.watch import FolderWatch
from tiller.workspace.checkpoints.writer import RestoreWriter

__all__ = [
    "MAX_FILE_BYTES",
    "ZERO_ID",
    "Changes",
    "CheckpointError",
    "Entry",
    "ShadowRepo",
    "Snapshot",
    "git_available",
    "now",
    "shadow_dir_for",
]

MAX_FILE_BYTES = 10 * 1024 * 1024  # larger files are skipped (and listed)
ZERO_ID = "0" * 40
# Loose objects that make housekeeping pack them (git's own ``gc --auto`` waits for ~6,700):
# a workspace's first snapshot writes one per file, a turn one per changed file and folder.
GC_LOOSE_OBJECTS = 1_000


@dataclass(frozen=True)
class Snapshot:
    commit: str
    skipped: tuple[str, ...] = ()  # over the size limit or unreadable
    tree: str = ""  # the commit's tree: two snapshots of the same files share it


@dataclass(frozen=True)
class Changes:
    """How the workspace differs from the state a restore brings back, kept as git sees it
    (``changed``/``added``/``removed``: seen from now). ``reverted``/``deleted``/``restored``
    say the same by what the restore does to each file; people and the wire read those."""

    changed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()  # present now, absent then: a restore removes them
    removed: tuple[str, ...] = ()  # absent now, present then: a restore puts them back

    @property
    def count(self) -> int:
        return len(self.changed) + len(self.added) + len(self.removed)

    @property
    def reverted(self) -> tuple[str, ...]:
        """Files whose content the restore brings back."""
        return self.changed

    @property
    def deleted(self) -> tuple[str, ...]:
        """Files the restore deletes (they did not exist then)."""
        return self.added

    @property
    def restored(self) -> tuple[str, ...]:
        """Files the restore re-creates (they were deleted since)."""
        return self.removed

    def to_wire(self) -> dict[str, list[str]]:
        """By effect, then the old fields (seen from now) for older clients."""
        return {
            "reverted": list(self.reverted),
            "deleted": list(self.deleted),
            "restored": list(self.restored),
            "changed": list(self.changed),
            "added": list(self.added),
            "removed": list(self.removed),
        }


def git_available() -> bool:
    return shutil.which("git") is not None


def shadow_dir_for(data_dir: Path, workspace: Path) -> Path:
    key = hashlib.sha256(str(workspace).encode()).hexdigest()[:16]
    return data_dir / "checkpoints" / f"{workspace.name or 'root'}-{key}.git"


@dataclass
class ShadowRepo:
    """The shadow repository of one workspace. Mutable: between snapshots it keeps the stat
    cache, every folder's tree and, with ``watch``, the kernel's word on what changed (the
    reason an incremental snapshot costs milliseconds)."""

    git_dir: Path
    workspace: Path
    max_file_bytes: int = MAX_FILE_BYTES
    private: tuple[Path, ...] = ()  # never snapshotted or restored (the data dir); git_dir too
    watch: bool = False  # follow changes with inotify (a server; not a one-off reader)
    _git: ShadowGit = field(init=False, repr=False)
    _objects: ObjectWriter = field(init=False, repr=False)
    _trees: TreeCache = field(init=False, repr=False)
    _files: WorkspaceScan = field(init=False, repr=False)  # the listing and the stat cache

    def __post_init__(self) -> None:
        self._git = ShadowGit(self.git_dir, self.workspace)
        self._objects = ObjectWriter(self.git_dir)
        self._trees = TreeCache(self._objects)
        watch = FolderWatch.start(self.workspace) if self.watch else None
        self._files = WorkspaceScan(self._git, self._hash_link, watch)

    def ensure(self) -> bool:
        """Create the shadow repository unless it exists; True when it was created now."""
        return self._git.ensure()

    # --- snapshot ------------------------------------------------------------------------

    def snapshot(self, message: str) -> Snapshot:
        """Record the workspace as it is now; returns the commit.

        Only the blobs of changed files and the trees of the folders that hold them are
        written (``objects``), straight into the repository: no git process runs
        unless a full scan lists the workspace."""
        self.ensure()
        entries, skipped = self._files.scan(
            self.private_paths(), self.max_file_bytes, self._hash_files
        )
        tree = self._trees.root(entries)
        return Snapshot(self._objects.commit(tree, message), tuple(skipped), tree)

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

    def _hash_files(self, paths: Sequence[str]) -> list[str | None]:
        return [self._objects.blob_of(self.workspace / path) for path in paths]

    def _hash_link(self, target: bytes) -> str:
        return self._objects.put(b"blob", target)

    # --- reading snapshots ---------------------------------------------------------------

    def tree(self, commit: str) -> dict[str, Entry]:
        out = self._git.run("ls-tree", "-r", "-z", "--full-tree", commit)
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
            a = {p: e for p, e in a.items() if not within(p, private)}
            b = {p: e for p, e in b.items() if not within(p, private)}
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
        ``finish_interrupted_restore`` or the next restore. Confined: see ``RestoreWriter``."""
        journal = self.journal_path
        partial = journal.with_suffix(".partial")
        partial.write_text(target, "utf-8")
        os.replace(partial, journal)  # a journal is whole or absent, never empty
        now = self.snapshot("before restore").commit
        diff = self.changes(now, target)
        wanted = self.tree(target)
        with RestoreWriter.at(self.workspace) as writer:
            for path in diff.added:
                writer.remove(path)
            self._write_blobs(writer, {p: wanted[p] for p in (*diff.changed, *diff.removed)})
        self._files.forget((*diff.changed, *diff.added, *diff.removed))  # rewritten: hash anew
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
            self._git.run("cat-file", "-e", f"{target}^{{commit}}")
        except CheckpointError:
            journal.unlink(missing_ok=True)
            raise CheckpointError(
                f"a restore cut short could not be finished: its snapshot {target[:12]} is no "
                "longer in the shadow repository, so the workspace may be partly restored"
            ) from None
        self.restore(target)
        return target

    def _write_blobs(self, writer: RestoreWriter, wanted: Mapping[str, Entry]) -> None:
        if not wanted:
            return
        paths = sorted(wanted)
        request = "".join(f"{wanted[p].blob}\n" for p in paths).encode()
        out = self._git.run("cat-file", "--batch", stdin=request)
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

    def collect(self, commits: Iterable[str]) -> None:
        """Keep ``commits`` (those still in use), then pack and prune with ``gc`` if it has
        work: a commit was let go, or ``GC_LOOSE_OBJECTS`` loose objects wait to be packed.
        Else nothing more runs: a full gc repacks every object, which a server start paid
        for each workspace before, even on a repository just made."""
        if self.keep_alive(commits) or self.loose_objects() >= GC_LOOSE_OBJECTS:
            self.gc()

    def loose_objects(self) -> int:
        """How many objects are not packed yet (``git count-objects``)."""
        for line in self._git.run("count-objects", "-v").decode().splitlines():
            name, _, value = line.partition(":")
            if name == "count":
                return int(value)
        raise CheckpointError("git count-objects gave no count")

    def keep_alive(self, commits: Iterable[str]) -> bool:
        """Point refs at the commits still in use so ``gc`` keeps them (and drops others).
        Commits this repository does not hold are passed over: no ref can name them. True
        when a commit kept before is let go."""
        held = self._held_commits(sorted(set(commits)))
        lines = "".join(f"update refs/tiller/keep/{c} {c}\n" for c in held)
        existing = self._git.run(
            "for-each-ref", "--format=%(refname)", "refs/tiller/keep/"
        ).decode()
        keep = {f"refs/tiller/keep/{c}" for c in held}
        drops = "".join(f"delete {r}\n" for r in existing.split() if r not in keep)
        if lines or drops:
            self._git.run("update-ref", "--stdin", stdin=(drops + lines).encode())
        return bool(drops)

    def _held_commits(self, ids: Sequence[str]) -> list[str]:
        if not ids:
            return []
        out = self._git.run(
            "cat-file", "--batch-check=%(objectname) %(objecttype)",
            stdin="".join(f"{c}\n" for c in ids).encode(),
        )  # fmt: skip
        found = (line.split(" ") for line in out.decode().splitlines())
        return [parts[0] for parts in found if parts[-1] == "commit"]

    def gc(self) -> None:
        self._git.run("gc", "--quiet", "--prune=1.day.ago", timeout=3600)
        self._objects.forget()  # what it pruned must be written again when next needed
        self._trees.reset()

    def close(self) -> None:
        """Stop following changes (the next snapshot scans everything)."""
        self._files.close()

    def disk_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.git_dir.rglob("*") if p.is_file())


def now() -> float:
    return time.time()
