"""A repository's command, skill or agent never shadows the user's own of the same name.

The user's wins the name; the repository's stays reachable under ``project:NAME`` (Claude
Code's old ``project:`` prefix), or, when the repository itself names something so (a
``project/NAME.md`` command), under the first free ``project:NAME-2``, ``project:NAME-3``, …
The user is told once which is which.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, TypeVar

from tiller.extend.confined_material import Confined

PREFIX = "project:"
T = TypeVar("T")
Scope = Literal["user", "project"]


@dataclass(frozen=True)
class Shadowed(Generic[T]):
    """A repository's item whose name is the user's: ``item`` renamed to ``name``."""

    item: T
    was: str  # the name its file gives it
    name: str  # the name it is reachable under


def namespaced(name: str, taken: Container[str]) -> str:
    """The name a repository's ``name`` takes when the user has one: ``project:NAME``, else the
    first free ``project:NAME-N`` (N = 2, 3, …)."""
    candidate, n = f"{PREFIX}{name}", 2
    while candidate in taken:
        candidate, n = f"{PREFIX}{name}-{n}", n + 1
    return candidate


def merge(
    user: Mapping[str, T], project: Mapping[str, T], rename: Callable[[T, str], T]
) -> tuple[dict[str, T], list[Shadowed[T]]]:
    """The user's items, then the repository's; a repository's item whose name is the user's
    is ``rename``d (after every unclashing name is placed, so a name the repository gives
    itself is never taken from it)."""
    merged = dict(user)
    clashing = []
    for name, item in project.items():
        if name in user:
            clashing.append((name, item))
        else:
            merged[name] = item
    shadowed = []
    for name, item in clashing:
        new = namespaced(name, merged)
        merged[new] = rename(item, new)
        shadowed.append(Shadowed(merged[new], name, new))
    return merged, shadowed


def shown_user_path(path: Path, env: Mapping[str, str] | None = None) -> str:
    """A path of the user's own material as a notice names it (``~/…`` under the home)."""
    env = os.environ if env is None else env
    home = env.get("HOME") or str(Path.home())
    norm = os.path.normpath(path)
    if norm.startswith(home.rstrip("/") + "/"):
        return "~/" + norm[len(home.rstrip("/")) + 1 :]
    return norm


def same_folder(a: Path, b: Path) -> bool:
    """Whether two folders are one (a workspace that is the home folder has its user dirs as
    its project dirs: they are read once, as the user's)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def read_where(
    dirs: Sequence[tuple[Scope, Path]], confined: Confined
) -> Iterator[tuple[Scope, Path, Confined | None]]:
    """Each folder of material with how it is read: the user's by path (None), the
    repository's beneath the workspace's roots; a repository folder that is one of the user's
    (the workspace is the home folder) is the user's, read once."""
    users = [folder for scope, folder in dirs if scope == "user"]
    for scope, folder in dirs:
        if scope == "project" and any(same_folder(folder, u) for u in users):
            continue
        yield scope, folder, None if scope == "user" else confined
