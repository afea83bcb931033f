"""Diagnostics as the sources of them say (the editor's, a language server's): what an edit's
result is compared against (``core/turn/edit_diagnostics.py``). Shared by the turn and the language
servers, so it lives below both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

from tiller.protocol import DiagnosticSeverity


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


@dataclass(frozen=True)
class NoDiagnostics:
    """Why there are none this time (then nothing is reported); ``notice``: what the user is
    told (None: nothing worth telling, such as a file no language server checks)."""

    notice: str | None = None


NONE: Final = NoDiagnostics()


class EditorDiagnostics(Protocol):
    """The diagnostics of ``paths`` (absolute) as a language server sees them now."""

    async def diagnostics(
        self, turn_id: str, paths: Sequence[Path], settle: bool
    ) -> tuple[Diagnostic, ...] | NoDiagnostics: ...
