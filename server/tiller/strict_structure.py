"""A cattrs converter that checks types strictly: what the wire and the settings files share.

JSON's loose spots are closed: a string is not a number, ``1`` is not ``true``, ``true`` is not
``1``. Each user of it (request params, settings files) adds the hooks of its own types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cattrs import Converter


def strict_converter() -> Converter:
    """A new converter whose ``str``, ``bool`` and ``int`` take only values of that type."""
    converter = Converter(forbid_extra_keys=False)

    def strict(kind: type[Any]) -> Callable[[Any, Any], Any]:
        def structure(value: Any, _: Any) -> Any:
            if not isinstance(value, kind) or isinstance(value, bool) is not (kind is bool):
                raise TypeError(f"expected {kind.__name__}, got {value!r:.40}")
            return value

        return structure

    for kind in (str, bool, int):
        converter.register_structure_hook(kind, strict(kind))
    return converter
