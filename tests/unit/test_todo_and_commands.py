from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from tiller.core.commands import (
    ChangeMode,
    ChangeModel,
    ChangeThinking,
    ClearQueue,
    NewSession,
    Reply,
    interpret,
)
from tiller.errors import ToolInputError
from tiller.protocol import Mode, Thinking, Todo
from tiller.workspace.tools.todo import needs_verification_nudge, parse_todos


def test_parse_todos_validates_statuses_and_content() -> None:
    todos = parse_todos({"todos": [{"content": "a", "status": "pending", "activeForm": "Doing a"}]})
    assert todos == (Todo("a", "pending", "Doing a"),)
    with pytest.raises(ToolInputError, match="status"):
        parse_todos({"todos": [{"content": "a", "status": "done", "activeForm": "x"}]})
    with pytest.raises(ToolInputError, match="content"):
        parse_todos({"todos": [{"content": " ", "status": "pending", "activeForm": "x"}]})
    with pytest.raises(ToolInputError, match="in_progress"):
        parse_todos(
            {
                "todos": [
                    {"content": "a", "status": "in_progress", "activeForm": "x"},
                    {"content": "b", "status": "in_progress", "activeForm": "y"},
                ]
            }
        )


def test_nudge_needs_three_completed_and_no_verification_step() -> None:
    done = [Todo(n, "completed", n) for n in ("parse", "flag", "docs")]
    assert needs_verification_nudge(done)
    assert not needs_verification_nudge(done[:2])
    assert not needs_verification_nudge([*done, Todo("Run pytest", "pending", "Running")])
    assert not needs_verification_nudge([*done, Todo("lint the code", "pending", "Linting")])


@dataclass
class View:
    id: str = "ses_1"
    mode: Mode = "default"
    model: str = "m1"
    thinking: Thinking = Thinking()
    todos: tuple[Todo, ...] = ()
    queued: Sequence[str] = field(default_factory=list)
    busy: bool = False


def test_interpret_returns_values_the_session_applies() -> None:
    view = View()
    assert interpret("/mode plan", view, max_tokens=8192) == ChangeMode("plan")
    assert interpret("/MODE acceptedits", view, max_tokens=8192) == ChangeMode("acceptEdits")
    assert interpret("/plan", view, max_tokens=8192) == ChangeMode("plan")
    assert interpret("/model  claude-x ", view, max_tokens=8192) == ChangeModel("claude-x")
    assert interpret("/thinking on", view, max_tokens=8192) == ChangeThinking(Thinking(True))
    assert interpret("/thinking 2000", view, max_tokens=8192) == ChangeThinking(
        Thinking(True, 2000)
    )
    assert isinstance(interpret("/thinking 99999", view, max_tokens=8192), Reply)
    assert interpret("/queue clear", view, max_tokens=8192) == ClearQueue()
    assert interpret("/clear", view, max_tokens=8192) == NewSession()
    # Like session/new, /clear while busy interrupts the turn (the session applies it).
    assert interpret("/clear", View(busy=True), max_tokens=8192) == NewSession()


def test_unknown_command_is_answered_with_the_list() -> None:
    reply = interpret("/nope", View(), max_tokens=8192)
    assert isinstance(reply, Reply) and "/help" in reply.message and "/nope" in reply.message


def test_thinking_command_takes_an_effort_or_a_budget_per_model() -> None:
    budget_model = View(model="claude-sonnet-4-5", thinking=Thinking(True, 3000))
    adaptive_model = View(model="claude-sonnet-5-5")
    assert interpret("/thinking high", adaptive_model, max_tokens=None) == ChangeThinking(
        Thinking(True, None, "high")
    )
    assert interpret("/thinking MAX", budget_model, max_tokens=None) == ChangeThinking(
        Thinking(True, None, "max")
    )
    # on/off keep what was chosen before
    assert interpret("/thinking off", budget_model, max_tokens=None) == ChangeThinking(
        Thinking(False, 3000)
    )
    # a budget must fit below the model's max output (64K on Sonnet 4.5) or the setting
    assert interpret("/thinking 60000", budget_model, max_tokens=None) == ChangeThinking(
        Thinking(True, 60000)
    )
    too_big = interpret("/thinking 70000", budget_model, max_tokens=None)
    assert isinstance(too_big, Reply) and "1024 to 63999" in too_big.message
    assert isinstance(interpret("/thinking 9000", budget_model, max_tokens=8192), Reply)
    # an adaptive model takes a budget as an effort, whatever maxTokens is
    assert interpret("/thinking 9000", adaptive_model, max_tokens=8192) == ChangeThinking(
        Thinking(True, 9000)
    )
    assert isinstance(interpret("/thinking 500", adaptive_model, max_tokens=None), Reply)
    usage = interpret("/thinking lots", adaptive_model, max_tokens=None)
    assert isinstance(usage, Reply) and "low|medium|high|max" in usage.message
    shown = interpret("/thinking", View(model="claude-opus-5-5"), max_tokens=None)
    assert isinstance(shown, Reply) and "always thinks" in shown.message


def test_model_command_shows_the_catalog_entry_and_flags_unknown_ids() -> None:
    shown = interpret("/model", View(model="claude-sonnet-5-5"), max_tokens=None)
    assert isinstance(shown, Reply)
    assert "Claude Sonnet 5.5" in shown.message and "1,000,000-token window" in shown.message
    unknown = interpret("/model", View(model="my-proxy-model"), max_tokens=None)
    assert isinstance(unknown, Reply) and "unknown to Tiller" in unknown.message
