"""JSON-RPC plumbing shared by the server and its Python clients (light: no SDK imports)."""

from __future__ import annotations

from typing import Any

from cattrs import Converter
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)


def plain_dict_converter() -> Converter:
    """pygls's converter, but custom-method params and results stay plain dicts.

    (pygls 2 would turn them into namedtuples.)
    """
    converter: Converter = default_converter()  # type: ignore[no-untyped-call]

    def keep(obj: dict[str, Any], cls: type[Any]) -> Any:
        return cls(**obj)

    for message_type in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(message_type, keep)
    return converter
