"""Diagnostics after edits: the errors an edit introduced, told to the model in its result.

Around a ``write_file``/``edit_file`` call that may run, the editor is asked for the file's
diagnostics twice: as they are before the call, and after it once its language servers have
settled (``settle``; the client bounds that wait). The errors present after and not before
(compared without their position, which an edit shifts) are appended to the call's result,
at most `MAX_REPORTED`, so the model fixes its own breakage in the next step. Anything going
wrong (no answer, an error, a malformed answer) is "no diagnostics": the result stays as it
was. A client that did not offer diagnostics is never asked (no `EditorDiagnostics`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final, Protocol

from tiller.protocol import DiagnosticSeverity
from tiller.workspace.tools.base import ToolResult

MAX_REPORTED: Final = 20
HEADER: Final = "The edit introduced these errors (reported by the editor's language server):"


@dataclass(frozen=True)
class Diagnostic:
    path: str
    line: int  # 1-based
    character: int  # 1-based
    severity: DiagnosticSeverity
    message: str
    source: str | None = None

    @property
    def identity(self) -> tuple[str, str, str, str | None]:
        """What an edit does not change about a diagnostic it did not cause (not its line)."""
        return (self.path, self.severity, self.message, self.source)

    def shown(self, workspace: Path) -> str:
        path = Path(self.path)
        if path.is_relative_to(workspace):
            path = path.relative_to(workspace)
        source = f" [{self.source}]" if self.source else ""
        return f"{path}:{self.line}:{self.character}: {self.message}{source}"


class EditorDiagnostics(Protocol):
    """The editor's diagnostics of ``paths`` (absolute), when it offers them; None when they
    could not be had (then nothing is reported)."""

    async def diagnostics(
        self, turn_id: str, paths: Sequence[Path], settle: bool
    ) -> tuple[Diagnostic, ...] | None: ...


def introduced(before: Sequence[Diagnostic], after: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The errors of ``after`` that ``before`` did not have (counted: a second copy of an
    error that was there once is new)."""
    seen = Counter(d.identity for d in before if d.severity == "error")
    new = []
    for found in after:
        if found.severity != "error":
            continue
        if seen[found.identity] > 0:
            seen[found.identity] -= 1
        else:
            new.append(found)
    return new


def report(found: Sequence[Diagnostic], workspace: Path) -> str:
    """What is appended to the result (empty when nothing was introduced)."""
    if not found:
        return ""
    lines = [f"- {d.shown(workspace)}" for d in found[:MAX_REPORTED]]
    if len(found) > MAX_REPORTED:
        lines.append(f"- … {len(found) - MAX_REPORTED} more")
    return "\n\n" + HEADER + "\n" + "\n".join(lines)


async def checked_edit(
    source: EditorDiagnostics,
    turn_id: str,
    path: Path,
    workspace: Path,
    run: Callable[[], Awaitable[ToolResult]],
) -> ToolResult:
    """``run`` the edit of ``path`` with the errors it introduced appended to its result."""
    before = await source.diagnostics(turn_id, (path,), settle=False)
    result = await run()
    if result.is_error or before is None:
        return result
    after = await source.diagnostics(turn_id, (path,), settle=True)
    if after is None:
        return result
    text = report(introduced(before, after), workspace)
    return replace(result, output=result.output + text) if text else result
