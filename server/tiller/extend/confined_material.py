"""The workspace's instruction material (instruction files and their imports, skills, commands,
agents) read beneath the workspace's roots, never by path.

A repository is a stranger's input: a ``pkg/AGENTS.md`` that is a symbolic link to a file
elsewhere on the machine, or a ``.claude`` folder that is one, would send that file to the
model. So every file of the workspace's material is opened by descriptor from a root, as the
file tools open theirs (``workspace/confined.py``): a link is followed only while it
stays beneath a root (a link from one root into another is followed there); a file, or a
folder on its way, that resolves outside every root is ``Refused`` with a notice naming the
link ("… is a symlink out of the workspace: not read"), and the rest is still read. A file
with other names (hard links) is refused too: one of them may be outside. Nothing there is
``None``, never a notice.

The user's own material (``~/.claude``, Tiller's user dir) is not read through this: it keeps
its own rule (``instructions.py``: imports only under the home folder).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from tiller.errors import ToolInputError
from tiller.workspace.confined import (
    MissingDirectory,
    Outside,
    Root,
    names_beneath,
    read_beneath,
    status_beneath,
)
from tiller.workspace.roots import WorkspaceRoots

T = TypeVar("T")
Kind = Literal["dir", "file"]
OUT = "is a symlink out of the workspace: not read"
OUTSIDE = "is outside the workspace: not read"
HARD_LINKS = "has other names (hard links), which may be outside the workspace: not read"


@dataclass(frozen=True)
class Refused:
    """A file (or folder) of the workspace's material that was not read, and why."""

    shown: str  # the path that was refused (the link that leads out, when one does)
    why: str

    @property
    def notice(self) -> str:
        return f"{self.shown} {self.why}"


@dataclass(frozen=True)
class Confined:
    """Reads files beneath the workspace's roots (the primary first)."""

    roots: tuple[Root, ...]

    @staticmethod
    def of(where: Path | WorkspaceRoots) -> Confined:
        """The roots of ``where``: a workspace folder, or every folder of a workspace."""
        paths = (where,) if isinstance(where, Path) else where.paths
        return Confined(tuple(Root.of(p) for p in paths))

    @property
    def primary(self) -> Path:
        """The primary root as configured (where ``.claude/`` and the root file are)."""
        return self.roots[0].given

    def root_of(self, path: Path) -> Root | None:
        """The innermost root that holds ``path`` by its name (``..`` taken lexically)."""
        norm = os.path.normpath(os.path.abspath(path))
        held = [r for r in self.roots if any(_under(norm, b) for b in (r.given, r.path))]
        return max(held, key=lambda r: len(str(r.path)), default=None)

    def holds(self, path: Path) -> bool:
        return self.root_of(path) is not None

    def shown(self, path: Path) -> str:
        """``path`` as a notice names it: relative to the primary root, else absolute."""
        norm = os.path.normpath(os.path.abspath(path))
        for base in (self.roots[0].given, self.roots[0].path):
            if _under(norm, base) and norm != str(base):
                return os.path.relpath(norm, base)
        return norm

    # --- reading ----------------------------------------------------------------------------

    def read(self, path: Path, limit: int) -> bytes | Refused | None:
        """At most ``limit`` bytes of the regular file at ``path``; None: no file there."""

        def regular(root: Root, raw: str) -> bytes | Refused:
            data, st = read_beneath(root, raw, limit)
            return Refused(self.shown(path), HARD_LINKS) if st.st_nlink > 1 else data

        return self._beneath(path, regular)

    def kind(self, path: Path) -> Kind | Refused | None:
        """Whether ``path`` is a folder or a regular file (None: neither, or nothing)."""

        def status(root: Root, raw: str) -> Kind | None:
            st = status_beneath(root, raw)
            if st is not None and stat.S_ISDIR(st.st_mode):
                return "dir"
            return "file" if st is not None and stat.S_ISREG(st.st_mode) else None

        return self._beneath(path, status)

    def names(self, folder: Path) -> list[str] | Refused | None:
        """The names in ``folder``, sorted (None: no folder there)."""
        if not os.path.isdir(folder):
            return None
        return self._beneath(folder, names_beneath)

    def _beneath(self, path: Path, action: Callable[[Root, str], T]) -> T | Refused | None:
        """``action`` on ``path`` beneath the root that holds it, or beneath the root its
        links lead into; refused when they lead out of every root."""
        if not os.path.exists(path):  # a stat (links followed), nothing read
            return None
        root = self.root_of(path)
        if root is None:
            return Refused(self.shown(path), OUTSIDE)
        try:
            return action(root, os.path.abspath(path))
        except Outside:
            pass
        except (FileNotFoundError, MissingDirectory):
            return None
        except ToolInputError as err:
            return Refused(self.shown(path), f"is not read: {err.message}")
        except OSError as err:
            return Refused(self.shown(path), f"cannot be read ({err.strerror or err})")
        real = Path(os.path.realpath(path))
        into = self.root_of(real)
        if into is not None:  # a link into another root, or into this one by another name
            try:
                return action(into, str(real))
            except (Outside, ToolInputError, OSError):
                pass
        return Refused(*self._link_out(path))

    def _link_out(self, path: Path) -> tuple[str, str]:
        """The first link on ``path`` that leads out of every root (the path itself when
        none does: ``..`` leads out), and why it is refused."""
        root = self.root_of(path)
        if root is None:
            return self.shown(path), OUTSIDE
        norm = Path(os.path.normpath(os.path.abspath(path)))
        base = root.given if _under(str(norm), root.given) else root.path
        here = base
        for part in norm.relative_to(base).parts:
            here = here / part
            if os.path.islink(here) and not self.holds(Path(os.path.realpath(here))):
                return self.shown(here), OUT
        return self.shown(path), OUT if os.path.islink(norm) else OUTSIDE


def _under(norm: str, base: Path) -> bool:
    text = str(base)
    return norm == text or norm.startswith(text.rstrip("/") + "/")
