"""Instruction files (AGENTS.md, CLAUDE.md) as the model reads them: ``@path`` imports expanded,
within a budget, with a mark where a file was cut.

- Levels: the user's (``$CLAUDE_CONFIG_DIR`` or ``~/.claude`` ``/CLAUDE.md``, Tiller's user dir
  ``/AGENTS.md``), the workspace root's (AGENTS.md, else CLAUDE.md), and nested ones: a folder
  under the root with its own AGENTS.md (else CLAUDE.md) applies once the agent works under it.
- Imports: ``@path`` at the start of a line or after a space, outside code spans and fenced
  blocks, naming an existing file: relative to the importing file, or ``~/`` for the home
  folder. Imported files are appended after the importing file's text, each under a
  ``## @path`` heading, up to 5 levels deep (as Claude Code documents); a file is imported
  once. Never outside: a workspace file imports only files inside the workspace, a user-level
  file only files inside the home folder (so a repository cannot send ``~/.ssh`` to the model).
- Confined: the workspace's files (the root file, nested ones, their imports) are read beneath
  the workspace's roots (``confined_material.py``): a file, or a folder on its way, that is a
  symlink out of the workspace is not read, and a notice names it (``Loaded.refused``, and
  ``root_notices``). The user's own files keep their rule and are read by path.
- Budget: each file with its imports at most ``FILE_BUDGET`` characters; where one is cut, a
  line says so and names it (``cut_notices`` finds those lines for the user's notice).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from tiller.extend.confined_material import OUTSIDE, Confined, Refused
from tiller.extend.settings_files import claude_user_dir, tiller_user_dir
from tiller.workspace.roots import WorkspaceRoots

FILE_BUDGET = 20_000  # characters of one instruction file, its imports included
MAX_IMPORT_DEPTH = 5
MEMORY_FILES = ("AGENTS.md", "CLAUDE.md")
CUT_MARK = "\n[Tiller cut {name} here: it is longer than {budget} characters]"
_CUT = re.compile(r"\[Tiller cut (.+?) here: it is longer than (\d+) characters\]")
_IMPORT = re.compile(r"(?:^|(?<=\s))@((?:~/|\.{1,2}/|/)?[\w.\-/]+)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SPAN = re.compile(r"`[^`\n]*`")


@dataclass(frozen=True)
class Loaded:
    name: str  # how the file is named to the model and the user
    text: str  # with its imports, cut to the budget (the cut marked)
    refused: tuple[str, ...] = ()  # notices: imports (or the file) not read, and why


def imports_in(text: str) -> list[str]:
    """The ``@path`` imports of ``text``, in order, outside code blocks and spans."""
    found: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        found += [m.group(1).rstrip(".") for m in _IMPORT.finditer(_SPAN.sub("", line))]
    return found


def _resolve(raw: str, importer: Path, home: Path) -> Path:
    if raw.startswith("~/"):
        return home / raw[2:]
    return importer.parent / raw


def _inside(path: Path, limit: Path) -> bool:
    try:
        path.resolve().relative_to(limit.resolve())
    except (ValueError, OSError):
        return False
    return True


def _read(path: Path, budget: int) -> str | None:
    try:
        with path.open("rb") as f:
            return f.read(budget * 4 + 4).decode("utf-8", errors="replace")
    except OSError:
        return None


def _read_in(path: Path, limit: Path | Confined, budget: int) -> str | Refused | None:
    """The text of ``path``: beneath the workspace's roots when ``limit`` is ``Confined``,
    else by path (a user-level file)."""
    if isinstance(limit, Path):
        return _read(path, budget)
    data = limit.read(path, budget * 4 + 4)
    return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data


def load(
    path: Path,
    name: str,
    limit: Path | Confined,
    home: Path,
    budget: int = FILE_BUDGET,
) -> Loaded | Refused | None:
    """``path`` with its imports, cut to ``budget``; None when it cannot be read.

    ``limit``: a workspace's ``Confined`` roots (the file and its imports are read beneath
    them; what leads out is refused, the file itself as ``Refused``, an import named in
    ``Loaded.refused``), or the folder a user-level file imports from (read by path)."""
    text = _read_in(path, limit, budget)
    if not isinstance(text, str):
        return text
    seen = {path.resolve()}
    parts = [text]
    refused: list[str] = []
    queue = [(path, text, 1)]
    while queue:
        importer, body, depth = queue.pop(0)
        if depth > MAX_IMPORT_DEPTH:
            continue
        for raw in imports_in(body):
            target = _resolve(raw, importer, home)
            if not target.is_file() or target.resolve() in seen:
                continue
            if isinstance(limit, Path) and not _inside(target, limit):
                continue
            if isinstance(limit, Confined) and not limit.holds(target):
                refused.append(f"{name} imports @{raw}, which {OUTSIDE}")
                continue
            imported = _read_in(target, limit, budget)
            if isinstance(imported, Refused):
                refused.append(f"{name} imports @{raw}: {imported.notice}")
            if not isinstance(imported, str):
                continue
            seen.add(target.resolve())
            parts.append(f"\n\n## @{raw}\n\n{imported}")
            queue.append((target, imported, depth + 1))
    whole = "".join(parts)
    if len(whole) > budget:
        whole = whole[:budget] + CUT_MARK.format(name=name, budget=budget)
    return Loaded(name, whole, tuple(refused))


def root_file(
    workspace: Path | WorkspaceRoots, env: Mapping[str, str] | None = None
) -> Loaded | None:
    """The workspace's AGENTS.md, else its CLAUDE.md, with its imports (read beneath the
    workspace's roots: one that leads out is passed over, and named in ``refused``)."""
    return _root(workspace, env)[0]


def root_notices(
    workspace: Path | WorkspaceRoots, env: Mapping[str, str] | None = None
) -> list[str]:
    """What the user is told of the root file: a file or import not read, and why."""
    loaded, refused = _root(workspace, env)
    return [*refused, *(loaded.refused if loaded is not None else ())]


def _root(
    workspace: Path | WorkspaceRoots, env: Mapping[str, str] | None
) -> tuple[Loaded | None, list[str]]:
    home = _home(env)
    confined = Confined.of(workspace)
    refused: list[str] = []
    for name in MEMORY_FILES:
        path = confined.primary / name
        if not path.is_file():
            continue
        loaded = load(path, name, confined, home)
        if isinstance(loaded, Refused):
            refused.append(loaded.notice)
        elif loaded is not None:
            return replace(loaded, refused=(*refused, *loaded.refused)), []
    return None, refused


def user_files(env: Mapping[str, str] | None = None) -> list[Loaded]:
    """The user's own instruction files (Claude Code's, then Tiller's)."""
    home = _home(env)
    found = []
    for path in (claude_user_dir(env) / "CLAUDE.md", tiller_user_dir(env) / "AGENTS.md"):
        if path.is_file():
            name = f"~/{path.relative_to(home)}" if _inside(path, home) else str(path)
            loaded = load(path, name, home, home)
            if isinstance(loaded, Loaded):
                found.append(loaded)
    return found


def nested_files(workspace: Path, target: Path) -> list[tuple[Path, Path]]:
    """(folder, file) of the nested instruction files that apply to ``target`` (a path in the
    workspace), outermost first; the root's own file is not nested."""
    try:
        relative = target.resolve().relative_to(workspace.resolve())
    except (ValueError, OSError):
        return []
    folders = [relative, *relative.parents] if target.is_dir() else list(relative.parents)
    found = []
    for folder in reversed(folders):
        if folder == Path("."):
            continue
        for name in MEMORY_FILES:
            path = workspace / folder / name
            if path.is_file():
                found.append((folder, path))
                break
    return found


def cut_notices(text: str) -> list[str]:
    """A notice per file the text says was cut."""
    return [
        f"{m.group(1)} is longer than {m.group(2)} characters: the model sees it cut"
        for m in _CUT.finditer(text)
    ]


def _home(env: Mapping[str, str] | None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("HOME") or Path.home())
