"""``tiller chat`` completes the ``@path`` being typed with the workspace's files and folders
(what `tiller.faces.client.mentions` attaches when the prompt is sent)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Final

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from tiller.workspace.roots import WorkspaceRoots

TYPING: Final = re.compile(r"(?:^|\s)@(\S*)$")
SKIPPED_DIRS: Final = frozenset({".git", "node_modules", "__pycache__", ".venv", ".mypy_cache"})
SHOWN: Final = 30


class PathCompleter(Completer):
    """Completes the ``@path`` being typed with the workspace's files and folders (with
    ``--add-dir``, the other roots' too, under their folder names)."""

    def __init__(self, workspace: Path, more: Sequence[Path] = ()) -> None:
        self.workspace = workspace
        self.roots = WorkspaceRoots.of(workspace, *more)

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        typing = TYPING.search(document.text_before_cursor)
        if typing is None:
            return
        partial = typing.group(1)
        folder, _, stem = partial.rpartition("/")
        for name, is_dir in self._entries(folder):
            if name.lower().startswith(stem.lower()):
                path = f"{folder}/{name}" if folder else name
                yield Completion(
                    path + ("/" if is_dir else ""),
                    start_position=-len(partial),
                    display=name + ("/" if is_dir else ""),
                )

    def _entries(self, folder: str) -> Iterator[tuple[str, bool]]:
        if not folder:  # the other roots, by the names that name them
            for other in self.roots.folders[1:]:
                if self.roots.shown(other.path) == other.name:
                    yield other.name, True
        base = self.roots.absolute(folder or ".").resolve()
        if not any(base.is_relative_to(root) for root in self.roots.paths) or not base.is_dir():
            return
        try:
            entries = sorted(os.scandir(base), key=lambda e: (not e.is_dir(), e.name))
        except OSError:
            return
        shown = 0
        for entry in entries:
            if entry.name in SKIPPED_DIRS or shown >= SHOWN:
                continue
            shown += 1
            yield entry.name, entry.is_dir()
