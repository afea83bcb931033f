"""JSON-RPC plumbing shared by the server, the ACP face and the Python clients (light: pygls
is imported only by `plain_dict_converter`).

`triage` checks one incoming JSON value against JSON-RPC 2.0 before pygls sees it: what to
deliver (possibly repaired), what to answer with an error, what to drop with a log line.

It is also the one place where values no handler can take are refused, whatever the method:
a lone surrogate (``"\\ud800"`` in JSON decodes to a Python str that UTF-8 cannot encode, so
SQLite, the SDK or the log would fail on it later) and a number outside -2^63 … 2^63 − 1
(nothing takes one; SQLite stores int64). Integers of more than 40 digits arrive as floats
(`tiller.faces.common.framing.parse_body`), so one of 5,000 digits is refused here like one of
20. `flaw` finds the first such value and names its path (``params.todos[2].content``).
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tiller.jsontypes import INT64_MAX, INT64_MIN, JSON

if TYPE_CHECKING:
    from cattrs import Converter
    from lsprotocol.types import InitializeResult

MsgId = int | str

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002


_SURROGATE = re.compile(r"[\ud800-\udfff]")
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_VALID = "send valid Unicode"


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate in ``text``, escaped (``\\ud800``), or None.

    (JSON's escaped pairs are joined when parsed, so any surrogate left in a str is lone.)
    """
    found = None if text.isascii() else _SURROGATE.search(text)
    return None if found is None else f"\\u{ord(found.group()):04x}"


def _unicode_problem(name: str, text: str) -> str | None:
    escaped = lone_surrogate(text)
    return None if escaped is None else f"{name} contains a lone surrogate ({escaped}); {_VALID}"


def _member(path: str, key: str) -> str:
    if _NAME.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def flaw(value: Any, path: str) -> str | None:
    """What makes ``value`` (parsed JSON, at ``path``) unfit for any handler, or None.

    Iterative: a value nested as deep as the JSON parser allows never overflows the stack.
    """
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        match item:
            case str():
                if (problem := _unicode_problem(where, item)) is not None:
                    return problem
            case bool() | None:
                pass
            case int() | float():
                if not (math.isfinite(item) and INT64_MIN <= item <= INT64_MAX):
                    return f"{where} is out of range: numbers must be from -2^63 to 2^63 - 1"
            case dict():
                for key in reversed(item):
                    if (escaped := lone_surrogate(key)) is not None:
                        return (
                            f"{where} has a member name with a lone surrogate ({escaped}); {_VALID}"
                        )
                    stack.append((_member(where, key), item[key]))
            case list():
                stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(item))))
    return None


@functools.cache
def plain_dict_converter() -> Converter:
    """pygls's converter, but custom-method params and results stay plain dicts.

    (pygls 2 would turn them into namedtuples.) A message without ``params`` gets
    ``params: None`` (JSON-RPC allows leaving it out) and unknown members are ignored.
    One per process: cattrs writes a function per type the first time it meets it (tens of
    ms for the handshake's types), and a converter keeps no state of a connection, so the
    servers and clients of a process share it, and a server forked from the warm template
    finds the handshake's functions written (`warm_handshake`).
    """
    # Imported here: pygls and lsprotocol take a second to import, and the ACP face uses this
    # module (`flaw`) without them.
    import attrs
    from pygls.protocol import (
        JsonRPCNotification,
        JsonRPCRequestMessage,
        JsonRPCResponseMessage,
        default_converter,
    )

    converter: Converter = default_converter()  # type: ignore[no-untyped-call]

    def keep(obj: dict[str, Any], cls: type[Any]) -> Any:
        known = {field.name for field in attrs.fields(cls)}
        values = {"params": None} if "params" in known else {}
        values.update((key, value) for key, value in obj.items() if key in known)
        return cls(**values)

    for message_type in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(message_type, keep)
    return converter


def warm_handshake(converter: Converter) -> None:
    """Have ``converter`` write its functions for what every connection starts with: the
    ``initialize`` request (with workspace folders) and its answer, ``initialized``,
    ``shutdown`` and ``exit``, and pygls's own messages: answers, errors, notifications and
    the server's own requests."""
    _warm_received(converter)
    sent = _sent_messages()
    # Twice: the first pass also registers what the messages' own fields need (a mapping's
    # function, the sequences'), each registration emptying the cache; the second fills it.
    for _ in range(2):
        for message in sent:
            converter.unstructure(message)


def _warm_received(converter: Converter) -> None:
    """The functions that read what a client sends first."""
    from lsprotocol import types as lsp

    received: tuple[type[Any], ...] = (
        lsp.InitializeRequest,
        lsp.InitializedNotification,
        lsp.ShutdownRequest,
        lsp.ExitNotification,
    )
    for message_type in received:
        converter.get_structure_hook(message_type)
    # What cattrs writes only when a value needs it: the folders' function, met inside a list.
    converter.structure(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "processId": None,
                "rootUri": None,
                "capabilities": {"workspace": {"workspaceFolders": True}},
                "workspaceFolders": [{"uri": "file:///", "name": "/"}],
            },
        },
        lsp.InitializeRequest,
    )


def _sent_messages() -> tuple[object, ...]:
    """One of each message a server sends first, in the order that leaves the converter's
    cache full."""
    from lsprotocol import types as lsp
    from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

    answer = _initialize_result()
    # First the containers a notification's plain-dict params hold: cattrs registers a
    # function for each container class the first time it meets one, and a registration
    # empties its whole cache of functions. Met first in a fork's first event, they emptied
    # it, and every message type's function was written again in every fork.
    containers: dict[str, object] = {
        "list": [],
        "tuple": (),
        "set": set(),
        "frozenset": frozenset(),
    }
    return (
        JsonRPCNotification(method="tiller/event", jsonrpc="2.0", params=containers),
        lsp.InitializeResponse(id=0, result=answer),
        lsp.ShutdownResponse(id=0, result=None),
        JsonRPCResponseMessage(id=0, jsonrpc="2.0", result=answer),  # how pygls answers
        answer.capabilities,  # pygls writes them alone too, for its log of `initialize`
        JsonRPCResponseMessage(id=0, jsonrpc="2.0", result={}),
        lsp.ResponseErrorMessage(id=0, error=lsp.ResponseError(code=-32603, message="")),
        JsonRPCNotification(method="tiller/event", jsonrpc="2.0", params={}),
        JsonRPCRequestMessage(id=0, method="window/showMessageRequest", jsonrpc="2.0", params={}),
    )


def _initialize_result() -> InitializeResult:
    """An ``initialize`` answer of the server's shape."""
    from lsprotocol import types as lsp

    return lsp.InitializeResult(
        capabilities=lsp.ServerCapabilities(
            text_document_sync=lsp.TextDocumentSyncOptions(
                open_close=False, change=lsp.TextDocumentSyncKind.None_
            ),
            execute_command_provider=lsp.ExecuteCommandOptions(commands=[]),
            workspace=lsp.WorkspaceOptions(
                workspace_folders=lsp.WorkspaceFoldersServerCapabilities(
                    supported=True, change_notifications=True
                )
            ),
            experimental={},
        ),
        server_info=lsp.ServerInfo(name="tiller", version="0"),
    )


def error_response(msg_id: MsgId | None, code: int, message: str) -> JSON:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


@dataclass(frozen=True)
class Deliver:
    """A well-formed message for pygls (a response without a result made into an error)."""

    message: JSON


@dataclass(frozen=True)
class Reject:
    """Answer with this error (``id`` None when the message's own id is unusable)."""

    id: MsgId | None
    code: int
    reason: str


@dataclass(frozen=True)
class Drop:
    """Nothing to answer (a notification or a response we cannot use); log the reason."""

    reason: str


Triage = Deliver | Reject | Drop


def valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def triage(value: Any) -> Triage:
    """Check one incoming JSON value; see the module docstring."""
    if not isinstance(value, dict):
        kind = "a batch (array)" if isinstance(value, list) else type(value).__name__
        return Reject(None, INVALID_REQUEST, f"expected a JSON-RPC object, got {kind}")
    raw_id = value.get("id")
    if raw_id is not None and not valid_id(raw_id):
        return Reject(None, INVALID_REQUEST, "'id' must be a string or an integer")
    if isinstance(raw_id, str) and (problem := _unicode_problem("'id'", raw_id)) is not None:
        return Reject(None, INVALID_REQUEST, problem)
    msg_id: MsgId | None = raw_id
    if value.get("jsonrpc") != "2.0":
        return Reject(msg_id, INVALID_REQUEST, "'jsonrpc' must be \"2.0\"")
    if "method" in value:
        return _call(value, msg_id)
    if msg_id is None:
        if "result" in value or "error" in value:
            return Drop(f"an answer with id null: {value!r:.200}")
        return Reject(None, INVALID_REQUEST, "neither a 'method' nor an 'id'")
    return Deliver(_response(value, msg_id))


def _call(value: JSON, answer_to: MsgId | None) -> Triage:
    method = value["method"]
    problem = (
        _unicode_problem("'method'", method)
        if isinstance(method, str)
        else "'method' must be a string"
    )
    if problem is not None:
        if answer_to is None:
            return Drop(f"a notification: {problem}")
        return Reject(answer_to, INVALID_REQUEST, problem)
    params = value.get("params")
    problem = (
        "'params' must be an object or an array"
        if params is not None and not isinstance(params, dict | list)
        else flaw(params, "params")
    )
    if problem is not None:
        if answer_to is None and "id" not in value:
            return Drop(f"{method}: {problem}")
        return Reject(answer_to, INVALID_PARAMS, problem)
    return Deliver(value if "params" in value else {**value, "params": None})


def _response(value: JSON, msg_id: MsgId) -> JSON:
    """A response as pygls resolves it; a malformed one becomes an error (fail closed)."""
    if "error" in value:
        error = value["error"]
        if (
            isinstance(error, dict)
            and isinstance(error.get("code"), int)
            and not isinstance(error.get("code"), bool)
            and isinstance(error.get("message"), str)
        ):
            return value
        return error_response(msg_id, INTERNAL_ERROR, f"malformed error in the answer: {error!r}")
    if "result" not in value:
        return error_response(msg_id, INVALID_REQUEST, "an answer without 'result' or 'error'")
    problem = flaw(value["result"], "result")
    if problem is not None:  # e.g. feedback no store or API could take: fail closed
        return error_response(msg_id, INTERNAL_ERROR, f"unusable answer: {problem}")
    return value
