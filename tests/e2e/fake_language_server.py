"""A language server that misbehaves on purpose, for the failures a real one cannot be made to
show on demand (tests/e2e/test_language_server_diagnostics.py, tests/unit/test_language_servers.py).

``python fake_language_server.py MODE MARKS``: it writes ``MARKS/started`` when it starts and
``MARKS/opened`` at the first ``didOpen``, then by MODE:

- ``pull``: offers pull diagnostics and answers ``textDocument/diagnostic`` with an error for
  each ``name: int = "..."`` line (a stand-in for a type checker);
- ``crash``: exits with code 3 at the first ``didOpen``;
- ``hang``: never publishes nor answers anything about a document;
- ``stall``: as ``pull`` for the first request, then never answers one again.

It speaks LSP's base protocol (``Content-Length`` frames of JSON-RPC 2.0) with the standard
library only, as ``tests/fixtures/mcp_misbehaving.py`` speaks MCP: built on pygls it spent
~0.5 s of CPU per start importing lsprotocol's ~1,000 classes, and the tests start it 20 times.
The real language server of these tests is pyright (``test_diagnostics_after_edits.py``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import unquote, urlparse

TYPE_ERROR = re.compile(r'^(\w+): int = "')
FULL_SYNC = 1  # TextDocumentSyncKind.Full
ERROR = 1  # DiagnosticSeverity.Error
METHOD_NOT_FOUND = -32601

JSON = dict[str, Any]


def errors_of(text: str) -> list[JSON]:
    found = []
    for number, line in enumerate(text.splitlines()):
        if match := TYPE_ERROR.match(line):
            found.append(
                {
                    "range": {
                        "start": {"line": number, "character": len(match.group(1)) + 8},
                        "end": {"line": number, "character": len(line)},
                    },
                    "message": 'Type "str" is not assignable to declared type "int"',
                    "severity": ERROR,
                    "source": "fake",
                }
            )
    return found


def read_message(stream: BinaryIO) -> JSON | None:
    """The next message, or None at the end of the input."""
    length = 0
    while True:
        line = stream.readline()
        if not line:
            return None
        if not line.strip():
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    message: JSON = json.loads(stream.read(length))
    return message


def send(message: JSON) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    sys.stdout.buffer.flush()


def capabilities(mode: str) -> JSON:
    offered: JSON = {"textDocumentSync": {"openClose": True, "change": FULL_SYNC}}
    if mode in ("pull", "stall"):
        offered["diagnosticProvider"] = {
            "interFileDependencies": False,
            "workspaceDiagnostics": False,
        }
    return offered


def main(mode: str, marks: Path) -> None:
    (marks / "started").write_text(str(os.getpid()))
    texts: dict[str, str] = {}
    answered: list[str] = []
    while (message := read_message(sys.stdin.buffer)) is not None:
        method, request_id = message.get("method"), message.get("id")
        params: JSON = message.get("params") or {}
        match method:
            case "initialize":
                info = {"name": "fake-language-server", "version": "0"}
                send(
                    {
                        "id": request_id,
                        "result": {"capabilities": capabilities(mode), "serverInfo": info},
                    }
                )
            case "textDocument/didOpen":
                document = params["textDocument"]
                texts[document["uri"]] = document["text"]
                (marks / "opened").write_text(document["uri"])
                if mode == "crash":
                    os._exit(3)
            case "textDocument/didChange":
                texts[params["textDocument"]["uri"]] = params["contentChanges"][-1]["text"]
            case "textDocument/didClose":
                texts.pop(params["textDocument"]["uri"], None)
            case "textDocument/diagnostic" if mode in ("pull", "stall"):
                if mode == "stall" and answered:
                    continue  # never answered
                uri = params["textDocument"]["uri"]
                answered.append(uri)
                text = texts.get(uri)
                if text is None:  # not opened: as it is on disk
                    text = Path(unquote(urlparse(uri).path)).read_text()
                send({"id": request_id, "result": {"kind": "full", "items": errors_of(text)}})
            case "shutdown":
                send({"id": request_id, "result": None})
            case "exit":
                return
            case str() if request_id is not None:  # a request it does not serve
                error = {"code": METHOD_NOT_FOUND, "message": f"no method {method}"}
                send({"id": request_id, "error": error})
            case _:
                pass  # a notification it ignores, or the client's answer


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
