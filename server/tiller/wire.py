"""JSON-RPC plumbing shared by the server and its Python clients (light: no SDK imports).

`triage` checks one incoming JSON value against JSON-RPC 2.0 before pygls sees it: what to
deliver (possibly repaired), what to answer with an error, what to drop with a log line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import attrs
from cattrs import Converter
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)

JSON = dict[str, Any]
MsgId = int | str

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002


def plain_dict_converter() -> Converter:
    """pygls's converter, but custom-method params and results stay plain dicts.

    (pygls 2 would turn them into namedtuples.) A message without ``params`` gets
    ``params: None`` (JSON-RPC allows leaving it out) and unknown members are ignored.
    """
    converter: Converter = default_converter()  # type: ignore[no-untyped-call]

    def keep(obj: dict[str, Any], cls: type[Any]) -> Any:
        known = {field.name for field in attrs.fields(cls)}
        values = {"params": None} if "params" in known else {}
        values.update((key, value) for key, value in obj.items() if key in known)
        return cls(**values)

    for message_type in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(message_type, keep)
    return converter


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
    if not isinstance(method, str):
        if answer_to is None:
            return Drop("a notification whose 'method' is not a string")
        return Reject(answer_to, INVALID_REQUEST, "'method' must be a string")
    params = value.get("params")
    if params is not None and not isinstance(params, dict | list):
        if answer_to is None and "id" not in value:
            return Drop(f"{method}: 'params' must be an object or an array")
        return Reject(answer_to, INVALID_PARAMS, "'params' must be an object or an array")
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
    return value
