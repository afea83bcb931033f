from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from tiller.core.session.commands import (
    HELP,
    MODE_NAMES,
    ChangeMode,
    ChangeModel,
    ChangeThinking,
    ClearQueue,
    NewSession,
    Reply,
    RewindTo,
    UndoRewind,
    interpret,
)
from tiller.core.session.rewind import board_after, last_board
from tiller.errors import ToolInputError
from tiller.jsontypes import JSON
from tiller.model.history import Message
from tiller.protocol import MODES, Mode, Thinking, Todo
from tiller.tools.todo import needs_verification_nudge, parse_todos
from tiller.workspace.checkpoints.shadow_repo import Changes


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
    assert isinstance(usage, Reply) and "low|medium|high|xhigh|max" in usage.message
    shown = interpret("/thinking", View(model="claude-opus-5-5"), max_tokens=None)
    assert isinstance(shown, Reply) and "always thinks" in shown.message


def test_model_command_shows_the_catalog_entry_and_flags_unknown_ids() -> None:
    shown = interpret("/model", View(model="claude-sonnet-5-5"), max_tokens=None)
    assert isinstance(shown, Reply)
    assert "Claude Sonnet 5.5" in shown.message and "1,000,000-token window" in shown.message
    unknown = interpret("/model", View(model="my-proxy-model"), max_tokens=None)
    assert isinstance(unknown, Reply) and "unknown to Tiller" in unknown.message


def test_every_mode_name_the_refusal_lists_is_taken() -> None:
    """Regression: `/mode accept edits` was refused by a message listing "accept edits"."""
    refused = interpret("/mode turbo", View(), max_tokens=None)
    assert isinstance(refused, Reply) and MODE_NAMES in refused.message
    for name in ("ask before edits", "default", "accept edits", "acceptEdits", "plan"):
        assert name in refused.message
        assert isinstance(interpret(f"/mode {name}", View(), max_tokens=None), ChangeMode), name
    typed_modes: list[tuple[str, Mode]] = [
        ("accept edits", "acceptEdits"),
        ("Accept-Edits", "acceptEdits"),
        ("accept_edits", "acceptEdits"),
        ("  ACCEPT   EDITS ", "acceptEdits"),
        ("Ask before edits", "default"),
        ("PLAN", "plan"),
    ]
    for typed, mode in typed_modes:
        assert interpret(f"/mode {typed}", View(), max_tokens=None) == ChangeMode(mode), typed


def test_mode_is_worded_one_way() -> None:
    for mode, words in zip(MODES, ("ask before edits", "accept edits", "plan"), strict=True):
        assert interpret("/mode", View(mode=mode), max_tokens=None) == Reply(f"Mode: {words}")


def test_rewind_dry_run_and_undo_commands_parse() -> None:
    view = View()
    assert interpret("/rewind", view, max_tokens=None) == RewindTo(None)
    assert interpret("/rewind turn_1", view, max_tokens=None) == RewindTo("turn_1")
    assert interpret("/rewind --dry-run", view, max_tokens=None) == RewindTo(None, dry_run=True)
    assert interpret("/rewind --dry-run turn_1", view, max_tokens=None) == RewindTo("turn_1", True)
    assert interpret("/rewind turn_1 --DRY-RUN", view, max_tokens=None) == RewindTo("turn_1", True)
    for bad in ("/rewind a b", "/rewind --dryrun", "/rewind -n turn_1"):
        usage = interpret(bad, view, max_tokens=None)
        assert isinstance(usage, Reply) and "Usage: /rewind [--dry-run] [turnId]" in usage.message
    assert interpret("/undo", view, max_tokens=None) == UndoRewind(None)
    assert interpret("/undo  undo_1 ", view, max_tokens=None) == UndoRewind("undo_1")
    assert "/rewind --dry-run [turnId]" in HELP and "/undo [undoId]" in HELP


def test_todo_command_does_not_present_an_item_as_running_while_idle() -> None:
    board = (Todo("a", "completed", "Doing a"), Todo("b", "in_progress", "Doing b"))
    idle = interpret("/todo", View(todos=board), max_tokens=None)
    assert isinstance(idle, Reply) and "no turn is running" in idle.message
    busy = interpret("/todo", View(todos=board, busy=True), max_tokens=None)
    assert isinstance(busy, Reply) and "no turn is running" not in busy.message


def test_changes_are_sent_by_effect_and_in_the_old_view() -> None:
    """Regression: a rewind that deleted two files was sent only as ``added`` (seen from now)."""
    wire = Changes(changed=("a.py",), added=("NOTES.md", "fib.py"), removed=("old.txt",)).to_wire()
    assert wire["reverted"] == ["a.py"] and wire["deleted"] == ["NOTES.md", "fib.py"]
    assert wire["restored"] == ["old.txt"]
    assert (wire["changed"], wire["added"], wire["removed"]) == (
        ["a.py"], ["NOTES.md", "fib.py"], ["old.txt"]
    )  # fmt: skip


def _board(tool_id: str, *items: tuple[str, str]) -> Message:
    todos: list[JSON] = [{"content": c, "status": st, "activeForm": c} for c, st in items]
    return Message("assistant", ({"type": "tool_use", "id": tool_id, "name": "todo_write",
                                  "input": {"todos": todos}},))  # fmt: skip


def _result(tool_id: str, *, error: bool = False) -> Message:
    block: JSON = {"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}
    return Message("user", ({**block, "is_error": True} if error else block,))


def _user(text: str) -> Message:
    return Message("user", ({"type": "text", "text": text},))


def _model(text: str) -> Message:
    return Message("assistant", ({"type": "text", "text": text},))


def test_last_board_skips_failed_todo_writes() -> None:
    ok, failed = _board("t1", ("a", "in_progress")), _board("t2", ("b", "pending"))
    history = (_user("go"), ok, _result("t1"), failed, _result("t2", error=True))
    assert last_board(history) == (Todo("a", "in_progress", "a"),)
    assert last_board((_user("go"), _model("hi"))) is None


def test_a_conversation_rewind_gives_back_the_board_from_before_the_turn() -> None:
    turn1 = (_user("plan"), _board("t1", ("a", "in_progress")), _result("t1"), _model("ok"))
    turn2 = (_user("chat"), _model("sure"))
    turn3 = (_user("work"), _board("t3", ("a", "completed")), _result("t3"), _model("done"))
    board1, board3 = (Todo("a", "in_progress", "a"),), (Todo("a", "completed", "a"),)
    everything = turn1 + turn2 + turn3
    # Before turn 3 or turn 2: the board turn 1 wrote.
    assert board_after(everything, turn1 + turn2, board3) == board1
    assert board_after(everything, turn1, board3) == board1
    # Before turn 1: no board was written before it: cleared.
    assert board_after(everything, (), board3) == ()
    # Rewinding turns that never wrote the board leaves it alone.
    assert board_after(turn1 + turn2, turn1, board1) == board1
    # The undo brings the later history back, and its board.
    assert board_after(turn1, everything, board1) == board3
