"""Diagnostics after edits: the errors an edit introduced, told to the model in its result.

Around a ``write_file``/``edit_file`` call that may run, a source of diagnostics is asked for
the file's diagnostics twice: as they are before the call, and after it once its language
server has settled (``settle``; the source bounds that wait). The source is the editor's, when
the client offers it (``faces/lsp/diagnostics.py``), else the configured language servers
(``extend/language_servers``). The errors present after and not before (compared without their
position, which an edit shifts) are appended to the call's result, at most `MAX_REPORTED`, so
the model fixes its own breakage in the next step. Anything going wrong (no answer, an error,
a malformed answer, a crashed or hung language server) is `NoDiagnostics`: the result stays as
it was, and its notice, if any, is shown to the user. No source: nothing is asked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Final

from tiller.tools.base import ToolResult
from tiller.workspace.diagnostics import Diagnostic, EditorDiagnostics, NoDiagnostics

MAX_REPORTED: Final = 20
HEADER: Final = "The edit introduced these errors (reported by the language server):"


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
    tell: Callable[[str], None],
) -> ToolResult:
    """``run`` the edit of ``path`` with the errors it introduced appended to its result;
    ``tell`` shows the user why there were no diagnostics, when that is worth a notice."""
    before = await source.diagnostics(turn_id, (path,), settle=False)
    result = await run()
    if isinstance(before, NoDiagnostics):
        if before.notice:
            tell(before.notice)
        return result
    if result.is_error:
        return result
    after = await source.diagnostics(turn_id, (path,), settle=True)
    if isinstance(after, NoDiagnostics):
        if after.notice:
            tell(after.notice)
        return result
    text = report(introduced(before, after), workspace)
    return replace(result, output=result.output + text) if text else result
