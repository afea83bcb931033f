"""The journal: a subscriber to a session's events that keeps its transcript in the store.

The transcript is the session's event log: every event a session posts is kept, in order, as
an entry ``{kind: <event type>, ...its fields}`` (approvals and their answers, slash commands,
notices, step restarts and rewinds are events like any other). Two things are folded: streamed
text and thinking are gathered and written as one ``assistantText`` / ``assistantThinking``
entry when the next entry comes, and live command output is not kept (the tool's result
carries it). :func:`tiller.core.session.transcript.as_events` turns entries back into events
for a redraw.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tiller.core.turn.events import Posted, TextDelta, ThinkingDelta, ToolOutput
from tiller.jsontypes import JSON
from tiller.workspace.store import SessionStore


@dataclass
class Journal:
    store: SessionStore
    session_id: str
    _streamed: list[str] = field(default_factory=list)  # assistant text not yet written
    _thought: list[str] = field(default_factory=list)  # thinking text not yet written

    def on_event(self, posted: Posted) -> None:
        match posted.event:
            case TextDelta(text=text):
                self._streamed.append(text)
            case ThinkingDelta(text=text):
                self._thought.append(text)
            case ToolOutput():
                pass
            case _:
                fields = posted.fields()
                kind = str(fields.pop("type"))
                self._write(posted.turn_id, kind, fields)

    def _write(self, turn_id: str | None, kind: str, data: JSON) -> None:
        """Add a transcript entry, after the text and thinking streamed before it."""
        if self._thought:
            text, self._thought = "".join(self._thought), []
            self.store.add_entry(self.session_id, turn_id, "assistantThinking", {"text": text})
        if self._streamed:
            text, self._streamed = "".join(self._streamed), []
            self.store.add_entry(self.session_id, turn_id, "assistantText", {"text": text})
        self.store.add_entry(self.session_id, turn_id, kind, data)
