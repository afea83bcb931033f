"""The editor's first message, read before the ACP SDK has loaded: ``initialize`` answered early.

An editor sends ``initialize`` as soon as it has spawned the agent and waits for the answer.
Loading the ACP SDK alone takes ~1 s cold (``acp.schema``: hundreds of pydantic models), the
agent and the Anthropic SDK behind it more. So ``tiller.faces.acp.serve`` starts those imports
in a thread and meanwhile reads the client's first line here, straight off stdin (``os.read``:
nothing is left in a buffer the SDK cannot see). When it is an ``initialize`` this module can
answer exactly as ``TillerAgent.initialize`` does (`answerable`), the answer goes out at once;
the agent, once loaded, runs that same ``initialize`` without answering it again
(``Opening.initialize``). Anything else goes to the SDK untouched, as if never read: another
method, a line that is not one JSON object, a message the Tiller protocol's edge check
refuses (``flaw``), a ``protocolVersion`` the SDK refuses, settings under ``_meta.tiller``
(checked by the agent before it answers).

Stdlib only (and ``flaw``): nothing here may wait for the imports it runs beside.
"""

from __future__ import annotations

import json
import os
import select
from dataclasses import dataclass
from typing import Any, Final

from tiller import __version__
from tiller.faces.common.wire import flaw
from tiller.jsontypes import JSON

PROTOCOL_VERSION: Final = 1  # acp.PROTOCOL_VERSION (agent-client-protocol 0.12): a test compares
MAX_PROTOCOL_VERSION: Final = 65535  # InitializeRequest.protocolVersion: a uint16
READ_SIZE: Final = 1 << 16


@dataclass(frozen=True)
class Opening:
    """What was read off stdin before the SDK: ``unread`` goes to the SDK first (all of it
    when nothing was answered); ``initialize`` holds the params of the ``initialize`` answered
    here (``answer``, the line written), for the agent to run once it is loaded."""

    unread: bytes
    initialize: JSON | None = None
    answer: bytes = b""


def initialize_result(protocol_version: int) -> JSON:
    """``TillerAgent.initialize``'s answer as the SDK puts it on the wire (tests compare)."""
    return {
        "protocolVersion": min(protocol_version, PROTOCOL_VERSION),
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {"list": {}, "additionalDirectories": {}},
        },
        "authMethods": [],
        "agentInfo": {"name": "tiller", "title": "Tiller", "version": __version__},
    }


def read_opening(fd: int) -> Opening:
    """Read the client's first line from ``fd`` (blocking) and answer it when it is an
    ``initialize`` this module can answer; the caller writes ``answer``."""
    data = _first_line(fd)
    line, newline, _ = data.partition(b"\n")
    found = answerable(line) if newline else None
    if found is None:
        return Opening(data)
    reply = {"jsonrpc": "2.0", "id": found.msg_id, "result": initialize_result(found.version)}
    # As the SDK's sender writes every message (acp.task.sender): compact, ASCII, one line.
    answer = (json.dumps(reply, separators=(",", ":")) + "\n").encode()
    return Opening(data[len(line) + 1 :], found.params, answer)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _first_line(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, READ_SIZE)
        except BlockingIOError:  # a non-blocking stdin: wait until there is something
            select.select([fd], [], [])
            continue
        chunks.append(chunk)
        if not chunk or b"\n" in chunk:
            return b"".join(chunks)


@dataclass(frozen=True)
class Initialize:
    """An ``initialize`` this module answers: its id, params and the version they ask for."""

    msg_id: int | str
    params: JSON
    version: int


def answerable(line: bytes) -> Initialize | None:
    """The ``initialize`` in ``line`` when the SDK takes it for sure and the agent has no
    settings of its own to check, else None. The SDK (agent-client-protocol 0.12) replaces a
    member it cannot read by its default (``clientCapabilities``, ``clientInfo``, ``_meta``):
    only ``protocolVersion`` can fail it."""
    try:
        message = json.loads(line)
    except ValueError:  # the SDK logs and drops it
        return None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    msg_id, params = message.get("id"), message.get("params")
    if isinstance(msg_id, bool) or not isinstance(msg_id, int | str):
        return None
    if flaw(msg_id, "id") is not None or flaw(params, "params") is not None:
        return None  # CheckedTransport answers it
    if not isinstance(params, dict) or "protocolVersion" not in params:
        return None
    meta = params.get("_meta")
    if isinstance(meta, dict) and "tiller" in meta:
        return None
    version = protocol_version(params["protocolVersion"])
    return None if version is None else Initialize(msg_id, params, version)


def protocol_version(value: Any) -> int | None:
    """``protocolVersion`` as the SDK reads it (a number, else ``int(value)``, else 1: Zed
    once sent "2024-11-05"), or None when the SDK refuses it (beyond a uint16)."""
    number = 1
    try:
        number = int(value)
    except (TypeError, ValueError):
        pass
    except OverflowError:  # an infinite float: refused before this, by flaw
        return None
    return number if 0 <= number <= MAX_PROTOCOL_VERSION else None
