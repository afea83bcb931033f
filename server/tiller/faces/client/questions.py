"""The server's questions as choices, defined once for both terminal clients (pure).

``tiller chat`` answers with a line typed after the question was drawn that names a choice
alone, then Enter (``faces/chat/answering.py``): keys typed before it, or a sentence that starts
with a choice's letter, never answer (the checkpoint's keys differ from the confirmation's on
purpose: a ``y`` meant for one never continues the other). ``tiller run`` reads a line: a
choice's key or one of its words, then optionally feedback. A choice with ``asks_feedback``
collects feedback (empty for none) when none came with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tiller.faces.common.render import tool_summary, trail_text
from tiller.jsontypes import JSON

QuestionKind = Literal["confirm", "plan", "checkpoint", "trust"]


@dataclass(frozen=True)
class Choice:
    key: str
    label: str
    answer: JSON
    asks_feedback: bool = False
    words: tuple[str, ...] = ()  # what a typed line may say instead of the key

    def answered(self, feedback: str = "") -> JSON:
        feedback = feedback.strip()
        return {**self.answer, "feedback": feedback} if feedback else dict(self.answer)


@dataclass(frozen=True)
class LineAnswer:
    """A typed line that picked a choice; ``feedback`` is whatever followed the first word."""

    choice: Choice
    feedback: str


@dataclass(frozen=True)
class Question:
    kind: QuestionKind
    title: str
    choices: tuple[Choice, ...]

    def choice(self, key: str) -> Choice | None:
        """The choice a key picks; ``None`` for any other key (it does nothing)."""
        return next((c for c in self.choices if c.key == key), None)

    def from_line(self, line: str) -> LineAnswer | None:
        """The choice a typed line names by its first word (key or word, any case)."""
        word, _, rest = line.strip().partition(" ")
        word = word.lower().rstrip(",:")
        for choice in self.choices:
            if word == choice.key or word in choice.words:
                return LineAnswer(choice, rest.strip())
        return None

    def prompt_line(self) -> str:
        return "  ".join(f"[{c.key}] {c.label}" for c in self.choices)

    def keys_text(self) -> str:
        """``y, a or n``: the keys, for a reminder."""
        keys = [c.key for c in self.choices]
        return ", ".join(keys[:-1]) + f" or {keys[-1]}" if len(keys) > 1 else "".join(keys)


def confirm_question(params: Any) -> Question:
    params = params if isinstance(params, dict) else {}
    name = str(params.get("name", "?"))
    summary = tool_summary(name, params.get("input"))
    preview = params.get("preview") if isinstance(params.get("preview"), dict) else {}
    command = preview.get("kind") == "command"
    always = "this command" if command else "all edits"
    remember = (
        (
            Choice(
                "r",
                "yes, and keep a rule (.tiller/settings.local.json)",
                {"decision": "allowAlways"},
                words=("rule",),
            ),
        )
        if command
        else ()
    )
    return Question(
        "confirm",
        f"Allow {name} {summary}".rstrip() + "?",
        (
            Choice("y", "yes", {"decision": "allow"}, words=("yes",)),
            Choice(
                "a",
                f"yes, {always} this session",
                {"decision": "allowSession"},
                words=("always",),
            ),
            *remember,
            Choice(
                "n",
                "no, and tell it why",
                {"decision": "deny"},
                asks_feedback=True,
                words=("no",),
            ),
        ),
    )


def trust_question(folder: str, held: Sequence[str]) -> Question:
    """``tiller chat``'s first start in a folder nobody decided on: trust it or not (kept in
    the user's own state, so it is asked once)."""
    files = "".join(f"\n    {line}" for line in held) or " (none yet)"
    return Question(
        "trust",
        f"Trust {folder}? A trusted folder's settings files may run programs (hooks, MCP and "
        "language servers) and widen grants (allow rules, extra folders); an untrusted one's "
        f"only narrow them, and its instruction files still apply. Its settings files:{files}",
        (
            Choice("t", "trust it", {"trusted": True}, words=("trust", "yes")),
            Choice(
                "n", "do not trust it (/trust yes changes it)", {"trusted": False}, words=("no",)
            ),
        ),
    )


def plan_question(params: Any) -> Question:
    return Question(
        "plan",
        "Approve the plan?",
        (
            Choice(
                "a",
                "approve, accept edits",
                {"approved": True, "mode": "acceptEdits"},
                words=("approve",),
            ),
            Choice(
                "m",
                "approve, ask before edits",
                {"approved": True, "mode": "default"},
                words=("manual", "manually"),
            ),
            Choice(
                "r",
                "reject with feedback",
                {"approved": False},
                asks_feedback=True,
                words=("reject",),
            ),
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
            Choice("c", "continue", {"continue": True}, words=("continue",)),
            Choice("s", "stop here", {"continue": False}, words=("stop",)),
        ),
    )
