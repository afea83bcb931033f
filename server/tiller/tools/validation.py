"""Tool inputs checked once, against each tool's own ``input_schema``, before a call runs.

The schema a tool publishes to the model is the only statement of what it accepts: the loop
validates every call here (JSON Schema Draft 2020-12, ``jsonschema``) before permission checks,
and a failure becomes an error result quoting the schema errors. The tools then read their
input without checking types again; they check only what a schema cannot say.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, relevance

from tiller.jsontypes import JSON
from tiller.tools.base import Tool

MAX_ERRORS = 5  # schema errors quoted in one result
MAX_MESSAGE_CHARS = 300  # an error quoting a huge value is cut


def validate_input(tool: Tool, tool_input: object) -> str | None:
    """None when ``tool_input`` is valid for ``tool``; else a message the model can act on.

    The message names the tool, then each schema error as ``at <path>: <message>``.
    """
    validator = _validator_for(tool.spec()["input_schema"])
    errors = sorted(validator.iter_errors(tool_input), key=relevance, reverse=True)
    if not errors:
        return None
    lines = [f"- at {_where(error)}: {_cut(error.message)}" for error in errors[:MAX_ERRORS]]
    if len(errors) > MAX_ERRORS:
        lines.append(f"- … and {len(errors) - MAX_ERRORS} more")
    return (
        f"Invalid input for {tool.name}; the call did not run. It does not match the tool's "
        "input_schema:\n" + "\n".join(lines) + "\nFix the input and call the tool again."
    )


def check_schemas(tools: Iterable[Tool]) -> None:
    """Raise ``jsonschema.SchemaError`` if a tool publishes a schema that is not valid."""
    for tool in tools:
        _validator_for(tool.spec()["input_schema"])


def _validator_for(schema: JSON) -> Draft202012Validator:
    return _compiled(json.dumps(schema, sort_keys=True))


@lru_cache(maxsize=256)
def _compiled(schema_text: str) -> Draft202012Validator:
    """One validator per distinct schema, checked once and kept (schemas are a few dozen)."""
    schema = json.loads(schema_text)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _where(error: ValidationError) -> str:
    """``$`` for the input itself, else a JSON path such as ``todos[0].status``."""
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _cut(message: str) -> str:
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return f"{message[:MAX_MESSAGE_CHARS]}… [cut]"
