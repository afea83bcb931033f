"""A language server that misbehaves on purpose, for the failures a real one cannot be made to
show on demand (tests/e2e/test_language_server_diagnostics.py); built on pygls's server.

``python fake_language_server.py MODE MARKS``: it writes ``MARKS/started`` when it starts and
``MARKS/opened`` at the first ``didOpen``, then by MODE:

- ``pull``: offers pull diagnostics and answers ``textDocument/diagnostic`` with an error for
  each ``name: int = "..."`` line (a stand-in for a type checker);
- ``crash``: exits with code 3 at the first ``didOpen``;
- ``hang``: never publishes nor answers anything about a document;
- ``stall``: as ``pull`` for the first request, then never answers one again.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

TYPE_ERROR = re.compile(r'^(\w+): int = "')


def errors_of(text: str) -> list[types.Diagnostic]:
    found = []
    for number, line in enumerate(text.splitlines()):
        if match := TYPE_ERROR.match(line):
            start = types.Position(number, len(match.group(1)) + 8)
            found.append(
                types.Diagnostic(
                    types.Range(start, types.Position(number, len(line))),
                    'Type "str" is not assignable to declared type "int"',
                    severity=types.DiagnosticSeverity.Error,
                    source="fake",
                )
            )
    return found


def main(mode: str, marks: Path) -> None:
    server = LanguageServer(
        "fake-language-server",
        "0",
        text_document_sync_kind=types.TextDocumentSyncKind.Full,
        notebook_document_sync=None,
    )
    (marks / "started").write_text(str(os.getpid()))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def opened(params: types.DidOpenTextDocumentParams) -> None:
        (marks / "opened").write_text(params.text_document.uri)
        if mode == "crash":
            os._exit(3)

    answered: list[str] = []

    if mode in ("pull", "stall"):

        @server.feature(
            types.TEXT_DOCUMENT_DIAGNOSTIC,
            types.DiagnosticOptions(inter_file_dependencies=False, workspace_diagnostics=False),
        )
        async def pulled(params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
            if mode == "stall" and answered:
                await asyncio.Event().wait()
            answered.append(params.text_document.uri)
            text = server.workspace.get_text_document(params.text_document.uri).source
            return types.RelatedFullDocumentDiagnosticReport(items=errors_of(text))

    server.start_io()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
