"""The transcript is the event log the server sent, and each Python face redraws a session from
it through the renderer it draws with live. The session is played against the real server by
``tests/journal_sample.py`` (the extension's redraw test replays the same sample)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from journal_sample import sample
from processes import until
from tiller.core.session.transcript import as_events
from tiller.faces.acp.updates import SessionUpdates, ToolCalls, replay
from tiller.faces.chat.events import EventLog
from tiller.faces.chat.printer import Printer
from warm import suite

JSON = dict[str, Any]
# One worker runs the module (scripts/test.sh: --dist loadgroup): the sample is made once.
pytestmark = pytest.mark.xdist_group("redraw_equals_live")
STREAMED = {"textDelta", "thinkingDelta", "toolOutput"}  # folded, or not kept
FOLDED = {"assistantText", "assistantThinking"}
ENVELOPE = {"seq", "sessionId"}  # the transcript numbers its entries itself


@pytest.fixture(scope="module")
def journaled(tmp_path_factory: pytest.TempPathFactory) -> JSON:
    base = tmp_path_factory.mktemp("journal")
    (base / "ws").mkdir()
    return asyncio.run(forked_sample(base / "ws", base / "data"))


async def forked_sample(workspace: Path, data_dir: Path) -> JSON:
    """The sample, its server forked from the suite's warm template as the harness's are
    (how it was started is not what these tests compare)."""
    await until(suite().connectable, 60)
    return await sample(workspace, data_dir, warm=True)


def live_events(journaled: JSON) -> list[JSON]:
    return [item["event"] for item in journaled["live"] if "event" in item]


def test_every_event_sent_is_journaled_in_order_with_the_same_fields(journaled: JSON) -> None:
    sent = [
        {k: v for k, v in event.items() if k not in ENVELOPE}
        for event in live_events(journaled)
        if event["type"] not in STREAMED
    ]
    kept = [
        {**{k: v for k, v in entry.items() if k not in ("seq", "kind")}, "type": entry["kind"]}
        for entry in journaled["transcript"]
        if entry["kind"] not in FOLDED
    ]
    assert kept == sent
    kinds = {event["type"] for event in sent}
    assert {"confirmRequested", "confirmDecided", "planRequested", "checkpointDecided"} <= kinds
    assert {"command", "rewound", "rewindUndone", "stepRestarted"} <= kinds


def test_streamed_text_and_thinking_are_kept_whole(journaled: JSON) -> None:
    for delta, folded in (("textDelta", "assistantText"), ("thinkingDelta", "assistantThinking")):
        streamed = "".join(e["text"] for e in live_events(journaled) if e["type"] == delta)
        kept = "".join(e["text"] for e in journaled["transcript"] if e["kind"] == folded)
        assert streamed and kept == streamed


class Lines(Printer):
    def __init__(self) -> None:
        super().__init__(lambda: False)
        self.lines: list[str] = []

    def line(self, text: str) -> None:
        self.lines.extend(re.sub(r"\x1b\[[0-9;]*m", "", text).split("\n"))


def chat_lines(events: list[JSON]) -> list[str]:
    printer = Lines()
    log = EventLog(printer, lambda: None)
    for event in events:
        log.on_event(event)
    log.end_partial()
    return printer.lines


def test_tiller_chat_redraws_what_it_showed_live(journaled: JSON) -> None:
    live = chat_lines(live_events(journaled))
    redrawn = chat_lines(list(as_events(journaled["transcript"], journaled["sessionId"])))
    assert redrawn == live
    assert any(line.startswith("? edit_file") for line in live)
    assert "› /mode plan" in live and "Mode: plan" in live


def acp_shown(updates: list[Any]) -> list[tuple[str, str]]:
    """What an editor shows: message chunks joined, tool calls with their last status."""
    shown: list[tuple[str, str]] = []
    for update in updates:
        kind = str(update.session_update)
        content = getattr(update, "content", None)
        text = getattr(content, "text", None) if not isinstance(content, list) else None
        if text is not None and shown and shown[-1][0] == kind:
            shown[-1] = (kind, shown[-1][1] + str(text))
        elif text is not None:
            shown.append((kind, str(text)))
        else:
            shown.append((kind, f"{update.tool_call_id} {getattr(update, 'status', None)}"))
    return shown


def test_acp_load_replays_what_the_editor_saw_live(journaled: JSON, tmp_path: Path) -> None:
    """Live, the editor drew the user's prompts itself; a load draws them from the log."""
    view = SessionUpdates(ToolCalls(tmp_path), replaying=True)
    live = [u for event in live_events(journaled) for u in view.updates(event)]
    loaded = replay(journaled["transcript"], tmp_path)
    assert acp_shown(loaded) == acp_shown(live)
    assert ("user_message_chunk", "Tidy up notes.txt") in acp_shown(loaded)
