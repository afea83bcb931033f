"""``tiller/diagnostics``: the editor's diagnostics, asked of a client that offered them.

A client offers them in ``initialize``'s ``capabilities.experimental.tiller.diagnostics: true``;
no other client is ever asked. Fail closed to "no diagnostics": an error answer, a malformed
one, or none within `ANSWER_SECONDS` (the client bounds its own wait for its language servers
to settle well below that) leaves the edit's result as it was.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from lsprotocol import types
from pygls.protocol import JsonRPCProtocol

from tiller import protocol as p
from tiller.faces.lsp.pygls_adapter import cancel_request, forget_request
from tiller.protocol import DiagnosticSeverity
from tiller.workspace.diagnostics import NONE, Diagnostic, NoDiagnostics

log = logging.getLogger(__name__)

ANSWER_SECONDS: Final = 10.0
SEVERITIES: Final[tuple[DiagnosticSeverity, ...]] = ("error", "warning", "information", "hint")


def offered(capabilities: types.ClientCapabilities) -> bool:
    """Whether the client said it answers ``tiller/diagnostics``."""
    experimental = capabilities.experimental
    tiller = experimental.get("tiller") if isinstance(experimental, dict) else None
    return isinstance(tiller, dict) and tiller.get("diagnostics") is True


class RpcDiagnostics:
    def __init__(self, protocol: JsonRPCProtocol) -> None:
        self.protocol = protocol

    async def diagnostics(
        self, turn_id: str, paths: Sequence[Path], settle: bool
    ) -> tuple[Diagnostic, ...] | NoDiagnostics:
        params: p.DiagnosticsParams = {
            "turnId": turn_id,
            "paths": [str(path) for path in paths],
            "settle": settle,
        }
        msg_id = f"tiller-{os.urandom(6).hex()}"
        future = self.protocol.send_request_async(p.DIAGNOSTICS, params, msg_id=msg_id)
        try:
            answer = await asyncio.wait_for(future, ANSWER_SECONDS)
        except asyncio.CancelledError:  # the turn was interrupted
            cancel_request(self.protocol, msg_id)  # a late answer is then ignored quietly
            raise
        except TimeoutError:
            cancel_request(self.protocol, msg_id)
            log.warning("tiller/diagnostics unanswered after %ss: no diagnostics", ANSWER_SECONDS)
            return NONE
        except Exception as err:
            log.warning("tiller/diagnostics failed, no diagnostics: %s", err)
            return NONE
        finally:
            forget_request(self.protocol, msg_id)
        found = parsed(answer)
        return NONE if found is None else found


def parsed(answer: Any) -> tuple[Diagnostic, ...] | None:
    """The answer's diagnostics; None for a malformed answer (all or nothing)."""
    found = answer.get("diagnostics") if isinstance(answer, dict) else None
    if not isinstance(found, list):
        log.warning("malformed tiller/diagnostics answer: %r", answer)
        return None
    out = []
    for item in found:
        if not isinstance(item, dict):
            return None
        path, line, character = item.get("path"), item.get("line"), item.get("character")
        severity, message, source = item.get("severity"), item.get("message"), item.get("source")
        if not (
            isinstance(path, str)
            and isinstance(line, int)
            and isinstance(character, int)
            and severity in SEVERITIES
            and isinstance(message, str)
            and (source is None or isinstance(source, str))
        ):
            log.warning("malformed diagnostic in tiller/diagnostics: %r", item)
            return None
        out.append(Diagnostic(path, line, character, severity, message, source))
    return tuple(out)
