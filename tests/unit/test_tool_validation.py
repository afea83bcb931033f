"""Tool inputs checked once against each tool's own input_schema (jsonschema, Draft 2020-12)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from jsonschema import SchemaError

from tiller.jsontypes import JSON
from tiller.tools import validation
from tiller.tools.base import Tool
from tiller.tools.files import EditFile, ListFiles, ReadFile, WriteFile
from tiller.tools.plan import EnterPlanMode, ExitPlanMode
from tiller.tools.registry import default_tools
from tiller.tools.search import Grep
from tiller.tools.todo import TodoWrite
from tiller.tools.validation import check_schemas, validate_input


def test_read_file_with_offset_zero_and_an_unknown_field_is_refused_quoting_both() -> None:
    """The bug seen: {"offset": 0, "bogus": 1} ran although the schema forbids both."""
    message = validate_input(ReadFile(), {"path": "a.txt", "offset": 0, "bogus": 1})
    assert message is not None
    assert message.startswith("Invalid input for read_file; the call did not run.")
    assert "at $.offset: 0 is less than the minimum of 1" in message
    assert "at $: Additional properties are not allowed ('bogus' was unexpected)" in message


def test_valid_inputs_pass() -> None:
    assert validate_input(ReadFile(), {"path": "a.txt", "offset": 1, "limit": 5}) is None
    assert validate_input(ListFiles(), {}) is None
    assert validate_input(WriteFile(), {"path": "a", "content": ""}) is None
    assert validate_input(EditFile(), {"path": "a", "old_string": "x", "new_string": ""}) is None
    assert validate_input(Grep(), {"pattern": "x", "path": "src", "glob": "*.py"}) is None
    assert validate_input(EnterPlanMode(), {}) is None
    assert validate_input(ExitPlanMode(), {"plan": "1. do it"}) is None
    todo = {"content": "Fix it", "status": "in_progress", "activeForm": "Fixing it"}
    assert validate_input(TodoWrite(), {"todos": [todo]}) is None


@pytest.mark.parametrize(
    ("tool", "bad", "quoted"),
    [
        (ReadFile(), {}, "'path' is a required property"),
        (ReadFile(), {"path": 3}, "at $.path: 3 is not of type 'string'"),
        (ReadFile(), {"path": ""}, "at $.path: '' should be non-empty"),
        (ReadFile(), {"path": "a", "offset": "3"}, "at $.offset: '3' is not of type 'integer'"),
        (ReadFile(), {"path": "a", "limit": 0}, "at $.limit: 0 is less than the minimum of 1"),
        (ReadFile(), {"path": "a", "offset": 1.5}, "is not of type 'integer'"),
        (WriteFile(), {"path": "a.txt"}, "'content' is a required property"),
        (EditFile(), {"path": "a", "old_string": "", "new_string": "y"}, "$.old_string"),
        (
            EditFile(),
            {"path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"},
            "at $.replace_all: 'yes' is not of type 'boolean'",
        ),
        (ListFiles(), {"pattern": ""}, "$.pattern"),
        (Grep(), {"pattern": ""}, "$.pattern"),
        (EnterPlanMode(), {"why": "x"}, "Additional properties"),
        (ExitPlanMode(), {"plan": "  \n"}, "at $.plan: '  \\n' does not match"),
        (
            TodoWrite(),
            {"todos": [{"content": "a", "status": "done", "activeForm": "x"}]},
            "at $.todos[0].status: 'done' is not one of",
        ),
        (TodoWrite(), {"todos": [{"content": "a", "status": "pending"}]}, "'activeForm' is a"),
        (ReadFile(), ["not", "an", "object"], "at $: ['not', 'an', 'object'] is not of type"),
    ],
)
def test_invalid_inputs_are_refused_with_the_schema_error(
    tool: Tool, bad: object, quoted: str
) -> None:
    message = validate_input(tool, bad)
    assert message is not None and quoted in message, message


def test_every_default_tool_refuses_unknown_fields_and_wrong_types() -> None:
    for tool in default_tools():
        message = validate_input(tool, {"bogus": 1})
        assert message is not None and "bogus" in message, tool.name
        assert validate_input(tool, None) is not None, tool.name


def test_every_default_schema_is_valid_draft_2020_12() -> None:
    check_schemas(default_tools())


def test_a_tool_with_a_broken_schema_is_a_programming_error() -> None:
    @dataclass(frozen=True)
    class Broken:
        name: str = "broken"
        kind: str = field(default="read")

        def spec(self) -> JSON:
            return {"name": self.name, "input_schema": {"type": "no-such-type"}}

    with pytest.raises(SchemaError):
        check_schemas([Broken()])  # type: ignore[list-item]


def test_many_errors_are_listed_up_to_a_bound_and_huge_values_cut() -> None:
    bad = {"path": "a", **{f"x{n}": n for n in range(20)}, "offset": "o" * 100_000}
    message = validate_input(ReadFile(), bad)
    assert message is not None
    assert message.count("\n- at ") <= validation.MAX_ERRORS
    assert len(message) < 3_000 and "[cut]" in message


def test_validators_are_compiled_once_per_schema() -> None:
    validation._compiled.cache_clear()
    for _ in range(50):
        validate_input(ReadFile(), {"path": "a"})
        validate_input(Grep(), {"pattern": "a"})
    assert validation._compiled.cache_info().misses == 2
