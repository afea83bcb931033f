"""todo_write: the model's task board, replaced whole on every call."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from tiller.errors import ToolInputError
from tiller.jsontypes import JSON
from tiller.protocol import TODO_STATUSES, Todo, TodoStatus
from tiller.tools.base import Preview, ToolContext, ToolKind, ToolResult

VERIFY_WORDS: Final = re.compile(
    r"\b(test|tests|testing|pytest|verify|verif\w*|lint\w*|check\w*|typecheck|mypy|ruff|build|"
    r"run the|ci)\b",
    re.IGNORECASE,
)

NUDGE: Final = (
    "Reminder: several items are done and none of them verifies the work. Before finishing, "
    "run the tests, linters or the program to check it, and add that as a todo."
)


def parse_todos(tool_input: JSON) -> tuple[Todo, ...]:
    """The board as values, or ToolInputError.

    Calls from the model already match the schema (``validation.py``); the checks stay for
    other callers, and one rule (a single in_progress item) is beyond the schema.
    """
    raw = tool_input.get("todos")
    if not isinstance(raw, list):
        raise ToolInputError("'todos' must be a list of {content, status, activeForm}")
    todos: list[Todo] = []
    for n, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ToolInputError(f"todos[{n}] must be an object")
        content, status, active = item.get("content"), item.get("status"), item.get("activeForm")
        if not isinstance(content, str) or not content.strip():
            raise ToolInputError(f"todos[{n}].content must be a non-empty string")
        if status not in TODO_STATUSES:
            raise ToolInputError(
                f"todos[{n}].status must be one of {', '.join(TODO_STATUSES)}, got {status!r}"
            )
        if active is None:
            active = content
        if not isinstance(active, str) or not active.strip():
            raise ToolInputError(f"todos[{n}].activeForm must be a non-empty string")
        todos.append(Todo(content.strip(), _status(status), active.strip()))
    if sum(t.status == "in_progress" for t in todos) > 1:
        raise ToolInputError("at most one todo may be in_progress at a time")
    return tuple(todos)


def _status(value: object) -> TodoStatus:
    for status in TODO_STATUSES:
        if value == status:
            return status
    raise ToolInputError(f"unknown status {value!r}")


def needs_verification_nudge(todos: Sequence[Todo]) -> bool:
    """3+ completed items and none of the board mentions a verification step."""
    completed = sum(t.status == "completed" for t in todos)
    return completed >= 3 and not any(VERIFY_WORDS.search(t.content) for t in todos)


def render_board(todos: Sequence[Todo]) -> str:
    marks = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
    if not todos:
        return "(the todo board is empty)"
    return "\n".join(f"{marks[t.status]} {t.content}" for t in todos)


@dataclass(frozen=True)
class TodoWrite:
    name: str = "todo_write"
    kind: ToolKind = "state"

    def spec(self) -> JSON:
        non_blank = {"type": "string", "minLength": 1, "pattern": r"\S"}
        item = {
            "type": "object",
            "properties": {
                "content": {**non_blank, "description": "The task, imperative form."},
                "status": {"type": "string", "enum": list(TODO_STATUSES)},
                "activeForm": {
                    **non_blank,
                    "description": "Present continuous form shown while in progress.",
                },
            },
            "required": ["content", "status", "activeForm"],
            "additionalProperties": False,
        }
        return {
            "name": self.name,
            "description": (
                "Replace the whole todo board with this list. Use it for multi-step work: "
                "keep exactly one item in_progress, mark items completed as soon as they are "
                "done, and include a verification step (tests, lint) for code changes."
            ),
            "input_schema": {
                "type": "object",
                "properties": {"todos": {"type": "array", "items": item}},
                "required": ["todos"],
                "additionalProperties": False,
            },
        }

    def is_read_only(self, tool_input: JSON) -> bool:
        return False

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        return Preview("text", {"text": "update the todo board"})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        try:
            todos = parse_todos(tool_input)
        except ToolInputError as err:
            return ToolResult(err.message, is_error=True)
        ctx.controls.replace_todos(todos)
        text = f"Todo board updated:\n{render_board(todos)}"
        if needs_verification_nudge(todos):
            text += f"\n\n{NUDGE}"
        return ToolResult(text)
