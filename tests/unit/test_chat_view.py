"""What the shell shows, from the server's shapes (v1 and the v2 additions)."""

from __future__ import annotations

import re
from typing import Any

from tiller.core.session.transcript import as_events
from tiller.faces.chat.events import EventLog
from tiller.faces.chat.printer import Printer
from tiller.faces.chat.view import (
    outcome_lines,
    queue_lines,
    rewind_line,
    todo_summary,
    toolbar_text,
    usage_text,
)

STATE: dict[str, Any] = {
    "sessionId": "s1",
    "mode": "plan",
    "model": "claude-test-1",
    "busy": False,
    "turnId": None,
    "queue": [],
    "activeTodo": None,
    "todoCounts": {"completed": 0, "total": 0},
    "toolsUsed": 0,
}


def test_toolbar_shows_mode_and_model_before_the_first_turn() -> None:
    assert toolbar_text(STATE) == "plan · claude-test-1"
    assert toolbar_text(None) == "starting the server…"


def test_toolbar_shows_todo_queue_context_cost_and_work() -> None:
    state = {
        **STATE,
        "busy": True,
        "queue": ["next", "after"],
        "activeTodo": "Running the tests",
        "todoCounts": {"completed": 3, "total": 8},
        "context": {"usedTokens": 50_000, "windowTokens": 200_000},
        "sessionCostUsd": 0.1234,
        "sandbox": "bwrap",
    }
    text = toolbar_text(state, frame=1)
    assert text.startswith(
        "plan · claude-test-1 · Running the tests (3/8) · queued 2 · context 25% · $0.12 · "
    )
    assert text.endswith(" working")


def test_toolbar_ignores_unknown_or_malformed_fields() -> None:
    state = {**STATE, "context": None, "sessionCostUsd": None, "new": {"x": 1}}
    assert toolbar_text(state) == "plan · claude-test-1"
    assert toolbar_text({**STATE, "context": {"usedTokens": 5, "windowTokens": 0}}) == (
        "plan · claude-test-1"
    )


def test_todo_summary_is_one_line_with_the_active_and_next_item() -> None:
    todos = [
        {"content": "Read", "status": "completed", "activeForm": "Reading"},
        {"content": "Fix", "status": "in_progress", "activeForm": "Fixing"},
        {"content": "Test", "status": "pending", "activeForm": "Testing"},
    ]
    assert todo_summary(todos) == "☰ todos 1/3 · ▸ Fixing · next: Test"
    assert todo_summary([]) is None
    done = [{"content": "Read", "status": "completed", "activeForm": "Reading"}]
    assert todo_summary(done) == "☰ todos 1/1 · all done"


def test_outcome_lines_say_what_ended_the_turn_and_the_trail() -> None:
    trail = [{"name": "read_file", "status": "ok"}, {"name": "bash", "status": "interrupted"}]
    assert outcome_lines({"outcome": "completed", "trail": trail}) == []
    assert outcome_lines({"outcome": "interrupted", "trail": trail}) == [
        "interrupted",
        "was working on: read_file ✓ → bash ✗",
    ]
    failed = {"outcome": "failed", "error": {"kind": "auth", "message": "bad key"}}
    assert outcome_lines(failed) == ["failed (auth): bad key"]
    refused = {"outcome": "refused", "refusal": {"explanation": "no"}}
    assert outcome_lines(refused) == ["refused: no"]
    stopped = {"outcome": "interrupted", "cause": "server_stopped"}
    assert outcome_lines(stopped) == ["interrupted (the server stopped)"]


def test_usage_line_only_when_something_was_used() -> None:
    usage = {
        "inputTokens": 200,
        "outputTokens": 340,
        "cacheReadTokens": 1000,
        "cacheWriteTokens": 0,
        "costUsd": 0.0123,
    }
    assert usage_text(usage) == "1.2k in · 340 out · $0.012"
    assert usage_text({"inputTokens": 0, "outputTokens": 0, "costUsd": None}) is None
    assert usage_text(None) is None


class Lines(Printer):
    """A printer that keeps the lines, without their colours."""

    def __init__(self) -> None:
        super().__init__(lambda: False)
        self.lines: list[str] = []

    def line(self, text: str) -> None:
        plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
        self.lines.extend(line.rstrip() for line in plain.split("\n") if line.strip())


def redrawn(entries: list[dict[str, Any]]) -> list[str]:
    printer = Lines()
    log = EventLog(printer, lambda: None)
    for event in as_events(entries, "s1"):
        log.on_event(event)
    log.end_partial()
    return printer.lines


def test_transcript_redraws_through_the_live_renderer() -> None:
    entries = [
        {"seq": 1, "kind": "turnStarted", "prompt": "fix it"},
        {"seq": 2, "kind": "assistantText", "text": "Looking.\nNow.\n"},
        {"seq": 3, "kind": "toolStarted", "toolUseId": "t1", "name": "bash",
         "input": {"command": "make"}},
        {"seq": 4, "kind": "toolFinished", "toolUseId": "t1", "name": "bash", "status": "ok",
         "durationMs": 12},
        {"seq": 5, "kind": "toolStarted", "toolUseId": "t2", "name": "edit_file",
         "input": {"path": "a.py"}},
        {"seq": 6, "kind": "toolFinished", "toolUseId": "t2", "name": "edit_file",
         "status": "ok", "durationMs": 3, "diff": {"added": 2, "removed": 1}},
        {"seq": 7, "kind": "planDecided", "approved": False, "feedback": "smaller"},
        {"seq": 8, "kind": "somethingNew", "x": 1},
        {"seq": 9, "kind": "turnEnded", "outcome": "interrupted",
         "trail": [{"name": "bash", "status": "ok"}]},
        {"seq": 10, "kind": "turnStarted", "prompt": "again"},
    ]  # fmt: skip
    assert redrawn(entries) == [
        "› fix it",
        "Looking.",
        "Now.",
        "✓ bash make (12 ms)",
        "✓ edit_file a.py (3 ms, +2 -1)",
        "plan rejected: smaller",
        "interrupted",
        "was working on: bash ✓",
        "› again",
    ]


def test_questions_commands_and_rewinds_are_redrawn_with_their_answers() -> None:
    entries = [
        {"seq": 1, "kind": "command", "text": "/mode plan", "message": "Mode: plan"},
        {"seq": 2, "kind": "planRequested", "plan": "Edit a.py."},
        {"seq": 3, "kind": "planDecided", "approved": True},
        {"seq": 4, "kind": "confirmRequested", "toolUseId": "t1", "name": "bash",
         "preview": {"kind": "command", "command": "make", "cwd": "."}},
        {"seq": 5, "kind": "confirmDecided", "toolUseId": "t1", "decision": "deny",
         "feedback": "not now"},
        {"seq": 6, "kind": "checkpointRequested", "toolsUsed": 30},
        {"seq": 7, "kind": "checkpointDecided", "continue": False},
        {"seq": 8, "kind": "rewound", "turnId": "turn-1", "files": True, "conversation": True,
         "undoId": "undo-1", "reverted": ["a.py"], "deleted": ["n.md"], "restored": [],
         "changed": ["a.py"], "added": ["n.md"], "removed": []},
        {"seq": 9, "kind": "rewindUndone", "undoId": "undo-1", "reverted": ["a.py"],
         "deleted": [], "restored": ["n.md"], "changed": ["a.py"], "added": [],
         "removed": ["n.md"]},
    ]  # fmt: skip
    assert redrawn(entries) == [
        "› /mode plan",
        "Mode: plan",
        "plan:",
        "Edit a.py.",
        "plan approved",
        "? bash make: asks for approval",
        "→ denied: not now",
        "checkpoint: 30 tool calls so far",
        "→ stop",
        "↺ rewound files (1 reverted, 1 deleted) and the conversation to before turn-1",
        "↺ rewind undone: files 1 reverted, 1 restored",
    ]


def test_rewind_lines_say_what_happened_to_files_even_for_old_entries() -> None:
    """Regression: a rewind that deleted two files read "0 changed, 2 added, 0 removed".
    Entries journaled before the effect fields carry only the old view (seen from now)."""
    old_rewind = {"type": "rewound", "turnId": "t1", "files": True, "conversation": False,
                  "changed": [], "added": ["NOTES.md", "fib.py"], "removed": []}  # fmt: skip
    assert rewind_line(old_rewind) == "↺ rewound files (2 deleted) to before t1"
    old_undo = {"type": "rewindUndone", "changed": [], "added": [], "removed": ["NOTES.md"]}
    assert rewind_line(old_undo) == "↺ rewind undone: files 1 restored"
    talk_only = {"type": "rewound", "turnId": "t1", "files": False, "conversation": True,
                 "reverted": [], "deleted": [], "restored": []}  # fmt: skip
    assert rewind_line(talk_only) == "↺ rewound the conversation to before t1"
    nothing = {"type": "rewindUndone", "reverted": [], "deleted": [], "restored": []}
    assert rewind_line(nothing) == "↺ rewind undone: no file changes"
    unchanged = {**talk_only, "files": True}
    assert rewind_line(unchanged) == (
        "↺ rewound files (no changes) and the conversation to before t1"
    )


def test_queue_lines_number_the_waiting_prompts() -> None:
    assert queue_lines(["one", "two"]) == ["⧗ queued 1: one", "⧗ queued 2: two"]


def test_text_from_the_model_cannot_send_escape_sequences_to_the_terminal() -> None:
    from tiller.faces.common.render import terminal_safe

    assert terminal_safe("ok\x1b]0;pwned\x07 \x1b[2J\rtab\tline\n") == (
        "ok^[]0;pwned^G ^[[2J^Mtab\tline\n"
    )
    assert terminal_safe("\x9b31m ✓ ü") == "^[31m ✓ ü"  # C1 CSI too


def test_a_board_shown_while_idle_marks_no_item_as_worked_on() -> None:
    todos = [
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
        {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
    ]
    assert todo_summary(todos) == "☰ todos 0/2 · ▸ Fixing the bug · next: Run the tests"
    idle = todo_summary(todos, running=False)
    assert idle == "☰ todos 0/2 · unfinished: Fix the bug · next: Run the tests"


def test_a_prompts_attachments_show_under_it() -> None:
    entries = [
        {"seq": 1, "kind": "turnStarted", "prompt": "look",
         "attachments": [{"kind": "file", "name": "src/a.py"}, {"kind": "problems",
                          "name": "problems"}, {"kind": "image", "name": "shot.png"}]},
    ]  # fmt: skip
    assert redrawn(entries) == ["› look", "  + @src/a.py · @problems · image shot.png"]


def test_each_tool_row_names_what_decided_it_and_a_steer_shows_where_it_landed() -> None:
    rule = "rule: Bash(make:*) (workspace .claude/settings.json)"
    entries = [
        {"seq": 1, "kind": "turnStarted", "prompt": "build"},
        {"seq": 2, "kind": "toolStarted", "toolUseId": "t1", "name": "bash",
         "input": {"command": "make"}, "permission": {"decision": "allow", "by": rule}},
        {"seq": 3, "kind": "toolFinished", "toolUseId": "t1", "name": "bash", "status": "ok",
         "durationMs": 12},
        {"seq": 4, "kind": "steered", "text": "and run the tests\nplease"},
        {"seq": 5, "kind": "turnEnded", "outcome": "completed", "trail": []},
    ]  # fmt: skip
    lines = redrawn(entries)
    assert lines[1:3] == [f"✓ bash make (12 ms)  · allow: {rule}", "↪ steered: and run the tests"]
