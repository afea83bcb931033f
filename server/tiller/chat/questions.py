"""The server's questions as choices on single keys (pure: the shell renders and resolves them).

A key that is not one of a question's choices answers nothing, so typing cannot answer an
approval by accident. A choice with ``asks_feedback`` first collects a line of feedback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..client.render import tool_summary, trail_text
from ..protocol import JSON

QuestionKind = Literal["confirm", "plan", "checkpoint"]


@dataclass(frozen=True)
class Choice:
    key: str
    label: str
    answer: JSON
    asks_feedback: bool = False

    def answered(self, feedback: str = "") -> JSON:
        feedback = feedback.strip()
        return {**self.answer, "feedback": feedback} if feedback else dict(self.answer)


@dataclass(frozen=True)
class Question:
    kind: QuestionKind
    title: str
    choices: tuple[Choice, ...]

    def choice(self, key: str) -> Choice | None:
        """The choice a key picks; ``None`` for any other key (it does nothing)."""
        return next((c for c in self.choices if c.key == key), None)

    def prompt_line(self) -> str:
        return "  ".join(f"[{c.key}] {c.label}" for c in self.choices)


def confirm_question(params: Any) -> Question:
    params = params if isinstance(params, dict) else {}
    name = str(params.get("name", "?"))
    summary = tool_summary(name, params.get("input"))
    preview = params.get("preview") if isinstance(params.get("preview"), dict) else {}
    always = "all edits" if preview.get("kind") == "diff" else "this command"
    return Question(
        "confirm",
        f"Allow {name} {summary}".rstrip() + "?",
        (
            Choice("y", "yes", {"decision": "allow"}),
            Choice("a", f"yes, {always} this session", {"decision": "allowSession"}),
            Choice("n", "no, and tell it why", {"decision": "deny"}, asks_feedback=True),
        ),
    )


def plan_question(params: Any) -> Question:
    return Question(
        "plan",
        "Approve the plan?",
        (
            Choice("a", "approve, accept edits", {"approved": True, "mode": "acceptEdits"}),
            Choice("m", "approve, ask before edits", {"approved": True, "mode": "default"}),
            Choice("r", "reject with feedback", {"approved": False}, asks_feedback=True),
        ),
    )


def checkpoint_question(params: Any) -> Question:
    params = params if isinstance(params, dict) else {}
    trail = trail_text(params.get("trail"))
    used = params.get("toolsUsed", "?")
    return Question(
        "checkpoint",
        f"{used} tool calls so far" + (f" ({trail})" if trail else "") + ". Continue?",
        (
            Choice("c", "continue", {"continue": True}),
            Choice("s", "stop here", {"continue": False}),
        ),
    )
