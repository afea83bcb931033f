"""Checkpoints of a workspace with several roots: one shadow repository per root, seen as one.

A snapshot id names one commit per root (``RootsCommit``: a JSON object from root path to
commit, where a one-root workspace has a plain commit id), so one checkpoint row, one
rewind and one undo cover every root. Paths in ``Changes`` are shown as the file tools show
them (``api/src/x.py``, see ``workspace/roots.py``).

The primary root's shadow repository is the one a one-root session of that folder uses; the
other roots' repositories are keyed by the primary root too (the checkpoint rows of a
workspace are found by its primary root, and ``collect`` keeps what they name).

A restore writes a journal of its own naming the whole target before it restores any root,
so a restore cut short (``kill -9`` between two roots) is finished in every root; restoring a
root to the commit it holds already changes nothing. A root added since a snapshot is left
as it is by a rewind to it; a rewind to a snapshot of a root removed since is refused
(``absent_roots``: it would bring back only part of the turn), naming the folder.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tiller.workspace.checkpoints.shadow_repo import Changes, CheckpointError, ShadowRepo, Snapshot
from tiller.workspace.confined import Label
from tiller.workspace.roots import WorkspaceRoots


def shadow_dir_of_root(data_dir: Path, primary: Path, root: Path) -> Path:
    """The shadow repository of ``root`` in the workspace whose primary root is ``primary``."""
    from tiller.workspace.checkpoints.shadow_repo import shadow_dir_for

    if root == primary:
        return shadow_dir_for(data_dir, primary)
    key = hashlib.sha256(f"{primary}\0{root}".encode()).hexdigest()[:16]
    return data_dir / "checkpoints" / f"{root.name or 'root'}-of-{primary.name}-{key}.git"


def decode(commit: str) -> dict[str, str]:
    """Root path -> commit of a snapshot id (a plain id belongs to the primary root: "")."""
    if not commit.startswith("{"):
        return {"": commit}
    try:
        found = json.loads(commit)
    except json.JSONDecodeError as err:
        raise CheckpointError(f"a checkpoint id is damaged: {err}") from None
    if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
        raise CheckpointError("a checkpoint id is damaged: not an object of commits")
    return {str(k): v for k, v in found.items()}


def encode(commits: dict[str, str]) -> str:
    return json.dumps(commits, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class ShownRepo:
    """One root's shadow repository and how paths beneath that root are shown."""

    repo: ShadowRepo
    label: Label

    def shown(self, changes: Changes) -> Changes:
        def show(paths: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(self.label.of(tuple(p.split("/"))) for p in paths)

        return Changes(show(changes.changed), show(changes.added), show(changes.removed))


def _merged(parts: Iterable[Changes]) -> Changes:
    changed: list[str] = []
    added: list[str] = []
    removed: list[str] = []
    for c in parts:
        changed += c.changed
        added += c.added
        removed += c.removed
    return Changes(tuple(changed), tuple(added), tuple(removed))


@dataclass
class RootsShadow:
    """The shadow repositories of every root, with the interface of one ``ShadowRepo``."""

    repos: dict[str, ShownRepo]  # by root path (str, symlinks resolved); the primary first
    primary: str
    workspace: Path  # the primary root as given: its sessions' checkpoint rows are these

    @staticmethod
    def open(data_dir: Path, roots: WorkspaceRoots, watch: bool = False) -> RootsShadow:
        primary = roots.folders[0].real
        repos = {
            str(f.real): ShownRepo(
                ShadowRepo(
                    shadow_dir_of_root(data_dir, primary, f.real),
                    f.real,
                    private=(data_dir,),
                    watch=watch,
                ),
                roots.label(f),
            )
            for f in roots.folders
        }
        return RootsShadow(repos, str(primary), roots.primary)

    @property
    def journal_path(self) -> Path:
        return self.repos[self.primary].repo.git_dir / "tiller-roots-restore.journal"

    def _at(self, commits: dict[str, str]) -> dict[str, tuple[ShownRepo, str]]:
        """The current roots a snapshot id names, each with its commit."""
        found = {(self.primary if k == "" else k): c for k, c in commits.items()}
        return {k: (self.repos[k], c) for k, c in found.items() if k in self.repos}

    def ensure(self) -> bool:
        """Create each root's repository unless it exists; True when every one was new."""
        created = [shown.repo.ensure() for shown in self.repos.values()]  # each, not up to one
        return all(created)

    def snapshot(self, message: str) -> Snapshot:
        commits: dict[str, str] = {}
        trees: dict[str, str] = {}
        skipped: list[str] = []
        for key, shown in self.repos.items():
            snap = shown.repo.snapshot(message)
            commits[key] = snap.commit
            trees[key] = snap.tree
            skipped += [shown.label.of(tuple(p.split("/"))) for p in snap.skipped]
        return Snapshot(encode(commits), tuple(skipped), encode(trees))

    def changes(self, now: str, then: str) -> Changes:
        a, b = self._at(decode(now)), self._at(decode(then))
        return _merged(a[k][0].shown(a[k][0].repo.changes(a[k][1], b[k][1])) for k in a if k in b)

    def restore(self, target: str) -> Changes:
        journal = self.journal_path
        partial = journal.with_suffix(".partial")
        partial.write_text(target, "utf-8")
        os.replace(partial, journal)  # whole or absent
        at = self._at(decode(target)).values()
        done = _merged(shown.shown(shown.repo.restore(c)) for shown, c in at)
        journal.unlink()
        return done

    def restore_pending(self) -> bool:
        return self.journal_path.exists() or any(
            s.repo.restore_pending() for s in self.repos.values()
        )

    def finish_interrupted_restore(self) -> str | None:
        """Finish each root's own restore cut short, then the whole restore it was part of."""
        finished: str | None = None
        for shown in self.repos.values():
            finished = shown.repo.finish_interrupted_restore() or finished
        try:
            target = self.journal_path.read_text("utf-8").strip()
        except FileNotFoundError:
            return finished
        if not target:
            self.journal_path.unlink(missing_ok=True)
            return finished
        self.restore(target)
        return target

    def collect(self, commits: Iterable[str]) -> None:
        """Each root's repository keeps the commits of ``commits`` it holds, and packs and
        prunes when it has work (``ShadowRepo.collect``)."""
        by_root: dict[str, set[str]] = {k: set() for k in self.repos}
        for commit in commits:
            try:
                decoded = decode(commit)
            except CheckpointError:
                continue
            for key, (_, c) in self._at(decoded).items():
                by_root[key].add(c)
        for key, shown in self.repos.items():
            shown.repo.collect(by_root[key])


def absent_roots(commit: str, present: Iterable[Path]) -> tuple[str, ...]:
    """The roots snapshot id ``commit`` names that are not among ``present`` (paths)."""
    here = {os.path.realpath(p) for p in present}
    return tuple(sorted(k for k in decode(commit) if k and k not in here))


def commits_of_root(commits: Iterable[str], root: Path) -> set[str]:
    """The commits of ``root``'s shadow repository that snapshot ids name (a plain id is
    that repository's own), for a one-root keeper to keep what multi-root sessions use."""
    key = os.path.realpath(root)
    found: set[str] = set()
    for commit in commits:
        try:
            decoded = decode(commit)
        except CheckpointError:
            continue
        found.update(c for k, c in decoded.items() if k in ("", key))
    return found
