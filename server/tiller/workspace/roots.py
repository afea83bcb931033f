"""The folders of a workspace (one or more roots) and how a path given by the model names one.

The first folder is the primary root: relative paths resolve against it, commands run in it,
and its instruction files, settings and MCP servers are the session's. The rule for a path
when there is more than one root (one root: every path is relative to it, as always):

- an absolute path belongs to the root that contains it (the innermost when roots nest);
  outside every root it is refused, naming the roots;
- ``./x`` (or ``../x``) is relative to the primary root, always;
- ``NAME/x``, where NAME is the folder name of exactly one root (the name the editor shows
  for the folder, by default its last path component), is ``x`` inside that root. When the
  primary root also has an entry called NAME (a subdirectory or file), the path is
  ambiguous and refused: the error gives ``./NAME/x`` for the primary root's entry and the
  absolute path for the folder's;
- any other relative path is relative to the primary root.

Paths are shown the same way, so whatever a tool result shows can be passed back: files of
the primary root plainly (``./`` in front when the first component is a folder name), files
of another root as ``NAME/x``, or absolute when the name cannot say it unambiguously (two
roots with one name, or the primary root has an entry of that name).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tiller.errors import TillerError, ToolInputError
from tiller.workspace.confined import Label, Outside, Root


class RootsError(TillerError):
    """A set of workspace folders that cannot be used (none, or one that is no directory)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="roots")


class Ambiguous(ToolInputError):
    """A path that names both a workspace folder and an entry of the primary root."""


@dataclass(frozen=True)
class WorkspaceFolder:
    """One root: its absolute path as given, and the name the editor shows for it."""

    path: Path
    name: str

    @staticmethod
    def of(path: Path, name: str | None = None) -> WorkspaceFolder:
        given = Path(os.path.abspath(path))
        return WorkspaceFolder(given, name or given.name or str(given))

    @property
    def real(self) -> Path:
        """The path with every symlink resolved."""
        return Path(os.path.realpath(self.path))


@dataclass(frozen=True)
class WorkspaceRoots:
    """Every folder of the workspace, the primary first (never empty, no folder twice)."""

    folders: tuple[WorkspaceFolder, ...]

    def __post_init__(self) -> None:
        if not self.folders:
            raise RootsError("a workspace needs at least one folder")

    @staticmethod
    def of(primary: Path, *more: Path) -> WorkspaceRoots:
        """The roots ``primary`` and ``more`` (named after their last component)."""
        return WorkspaceRoots.named([(primary, None), *((p, None) for p in more)])

    @staticmethod
    def named(folders: Iterable[tuple[Path, str | None]]) -> WorkspaceRoots:
        """Roots from (path, name) pairs in order; a path given twice is kept once."""
        kept: list[WorkspaceFolder] = []
        for path, name in folders:
            folder = WorkspaceFolder.of(path, name)
            if all(k.real != folder.real for k in kept):
                kept.append(folder)
        return WorkspaceRoots(tuple(kept))

    @property
    def primary(self) -> Path:
        return self.folders[0].path

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(f.path for f in self.folders)

    @property
    def several(self) -> bool:
        return len(self.folders) > 1

    def changed(self, added: Sequence[WorkspaceFolder], removed: Sequence[Path]) -> WorkspaceRoots:
        """These roots with folders added and removed; the primary root is never removed
        (the session's settings, instructions and commands belong to it)."""
        gone = {Path(os.path.realpath(p)) for p in removed} - {self.folders[0].real}
        kept = [f for f in self.folders if f.real not in gone]
        return WorkspaceRoots.named([*((f.path, f.name) for f in kept),
                                     *((f.path, f.name) for f in added)])  # fmt: skip

    # --- naming a path ----------------------------------------------------------------------

    def _qualifiers(self) -> dict[str, WorkspaceFolder]:
        """Folder names that name exactly one root."""
        count: dict[str, int] = {}
        for f in self.folders:
            count[f.name] = count.get(f.name, 0) + 1
        return {f.name: f for f in self.folders if count[f.name] == 1 and "/" not in f.name}

    def _primary_has(self, name: str) -> bool:
        return os.path.lexists(self.primary / name)

    def root_for(self, raw: str) -> Root:
        """The root ``raw`` names, ready to ``locate`` it (ToolInputError when it names none
        or is ambiguous)."""
        if "\x00" in raw:
            raise ToolInputError("path contains a NUL byte; give a file path without one")
        if not self.several:
            return Root.of(self.primary)
        if os.path.isabs(raw):
            return self._root_of_absolute(raw)
        first = raw.split("/", 1)[0]
        folder = self._qualifiers().get(first)
        if folder is None:
            return self._root(self.folders[0])
        if self._primary_has(first):
            rest = raw.split("/", 1)[1] if "/" in raw else ""
            raise Ambiguous(
                f"path {raw!r} is ambiguous: {first!r} is the workspace folder {folder.name} "
                f"({folder.path}) and also an entry of the primary folder "
                f"{self.folders[0].name} ({self.primary}). Write './{raw}' for the primary "
                f"folder's entry, or {str(folder.path.joinpath(*rest.split('/')))!r} for the "
                f"folder {folder.name}."
            )
        return self._root(folder, strip=first)

    def _root_of_absolute(self, raw: str) -> Root:
        norm = os.path.normpath(raw)
        best: WorkspaceFolder | None = None
        for folder in self.folders:
            for base in {str(folder.path), str(folder.real)}:
                inside = norm == base or norm.startswith(base.rstrip("/") + "/")
                if inside and (best is None or len(str(folder.real)) > len(str(best.real))):
                    best = folder
        if best is None:
            raise Outside(f"path {raw!r} is outside every workspace folder ({self.describe()})")
        return self._root(best)

    def _root(self, folder: WorkspaceFolder, strip: str | None = None) -> Root:
        root = Root.of(folder.path)
        return Root(root.path, root.given, self.label(folder), strip)

    def label(self, folder: WorkspaceFolder) -> Label:
        """How paths beneath ``folder`` are shown (see the module's rule)."""
        if not self.several:
            return Label()
        names = self._qualifiers()
        if folder == self.folders[0]:
            return Label(escape=frozenset(names))
        if names.get(folder.name) == folder and not self._primary_has(folder.name):
            return Label(prefix=f"{folder.name}/")
        return Label(prefix=f"{folder.path}/")

    def every_root(self) -> tuple[Root, ...]:
        """Every root with its label, for a search that covers them all."""
        return tuple(self._root(f) for f in self.folders)

    def shown(self, path: Path) -> str:
        """An absolute path as tools show it (the path itself when outside every root)."""
        real = Path(os.path.realpath(path))
        for folder in sorted(self.folders, key=lambda f: -len(str(f.real))):
            if real == folder.real or folder.real in real.parents:
                return self.label(folder).of(real.relative_to(folder.real).parts)
        return str(path)

    def absolute(self, raw: str) -> Path:
        """Where ``raw`` points by the rule, for display (nothing is opened or confined; a
        path the rule refuses is taken as the primary root's)."""
        try:
            root = self.root_for(raw)
            parts = root.parts_of(raw)
        except ToolInputError:
            return Path(os.path.normpath(self.primary / raw))
        return Path(os.path.normpath(root.given.joinpath(*parts)))

    def describe(self) -> str:
        return ", ".join(f"{f.name} at {f.path}" for f in self.folders)
