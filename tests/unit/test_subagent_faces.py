"""Every face renders a subagent under the task call that started it: ``tiller chat`` and
``tiller run`` as indented lines (the child's text never joins the answer, its turnEnded never
ends the parent's turn), ACP as the task call's ``tool_call_update`` content."""

from __future__ import annotations

import io
import re
from pathlib import Path

from acp.schema import ContentToolCallContent, TextContentBlock, ToolCallProgress

from tiller.faces.acp.updates import SessionUpdates, ToolCalls
from tiller.faces.chat.events import EventLog
from tiller.faces.chat.printer import Printer
from tiller.faces.client.plain import Run
from tiller.faces.client.terminal import Output
from tiller.jsontypes import JSON

PARENT, CHILD = "ses_parent", "ses_child"


class Lines(Printer):
    """A printer that keeps the lines, without their colours."""

    def __init__(self) -> None:
        super().__init__(lambda: False)
        self.lines: list[str] = []

    def line(self, text: str) -> None:
        plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
        self.lines.extend(line.rstrip() for line in plain.split("\n") if line.strip())


def parent(type_: str, **fields: object) -> JSON:
    return {"sessionId": PARENT, "turnId": "turn_p", "seq": 1, "type": type_, **fields}


def child(type_: str, **fields: object) -> JSON:
    return {
        "sessionId": CHILD, "turnId": "turn_c", "seq": 1, "parentTurnId": "turn_p",
        "type": type_, **fields,
    }  # fmt: skip


TASK_INPUT = {"description": "find the config", "prompt": "look", "subagent_type": "explore"}
EVENTS: list[JSON] = [
    parent("turnStarted", prompt="explore"),
    parent("textDelta", text="Delegating."),
    parent("toolStarted", toolUseId="p1", name="task", input=TASK_INPUT, batch=0,
           concurrent=False, permission={"decision": "allow", "by": "read-only"}),
    parent("agentStarted", toolUseId="p1", agentSessionId=CHILD, agent="explore",
           description="find the config"),
    child("turnStarted", prompt="look"),
    child("textDelta", text="CHILD THINKS ALOUD"),
    child("toolStarted", toolUseId="c1", name="bash", input={"command": "sleep 1"}, batch=0,
          concurrent=False, permission={"decision": "allow", "by": "read-only"}),
    child("toolFinished", toolUseId="c1", name="bash", status="ok", output="", durationMs=1003),
    child("turnEnded", outcome="completed", trail=[], final="it is in setup.cfg",
          usage={"inputTokens": 100, "outputTokens": 20, "cacheReadTokens": 0,
                 "cacheWriteTokens": 0, "costUsd": 0.001}),
    parent("toolFinished", toolUseId="p1", name="task", status="ok",
           output="it is in setup.cfg", durationMs=1500),
    parent("turnEnded", outcome="completed", trail=[], final="Found it."),
]  # fmt: skip


def test_tiller_chat_indents_a_child_under_its_task_call() -> None:
    printer = Lines()
    log = EventLog(printer, lambda: None)
    for event in EVENTS[:7]:
        log.on_event(event)
    live = [text for _, text in log.live_lines()]
    assert any("explore › bash sleep 1" in line for line in live)  # its current tool, live
    for event in EVENTS[7:]:
        log.on_event(event)
    lines = printer.lines
    assert "  ⤷ explore agent: find the config  (ses_child)" in lines
    assert any(line.startswith("    ✓ explore › bash sleep 1 (1003 ms") for line in lines)
    assert "  ⤶ explore agent completed (100 in, 20 out)" in lines
    assert not any("CHILD THINKS ALOUD" in line for line in lines)
    assert log.running == {}


def test_tiller_run_indents_a_child_and_waits_for_the_parents_turn() -> None:
    out, err = io.StringIO(), io.StringIO()
    run = Run(Output(out, err), yes=True, terminal=None)
    for event in EVENTS:
        run.on_event(event)
    printed = out.getvalue()
    assert "CHILD THINKS ALOUD" not in printed and "Delegating." in printed
    assert "  ⤷ explore agent: find the config" in printed
    assert "    … explore › bash sleep 1" in printed
    assert "  ⤶ explore agent completed" in printed
    assert set(run.turn_ended) == {"turn_p"}  # the child's end is not a turn of the run's


def test_acp_shows_a_childs_progress_as_the_task_calls_content() -> None:
    view = SessionUpdates(ToolCalls(Path("/ws")))
    updates = [u for event in EVENTS for u in view.updates(event)]
    progress = [u for u in updates if isinstance(u, ToolCallProgress) and u.tool_call_id == "p1"]
    texts = []
    for update in progress:
        for item in update.content or []:
            if isinstance(item, ContentToolCallContent) and isinstance(
                item.content, TextContentBlock
            ):
                texts.append(item.content.text)
    assert any("… explore › bash sleep 1" in t for t in texts)  # live, while it runs
    final = progress[-1]
    assert final.status == "completed"
    assert texts[-1] == "it is in setup.cfg"  # the report, after the progress lines
    assert any("✓ explore › bash sleep 1" in t and "⤶ explore agent completed" in t for t in texts)
    assert not any(
        getattr(u, "tool_call_id", None) in ("c1",) for u in updates
    )  # the child's calls are not calls of the editor's session
