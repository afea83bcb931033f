"""The journal: a subscriber to a session's events that keeps its transcript in the store.

Everything a client showed is kept, in order: streamed text and thinking are gathered and
written as one entry when the next entry comes (live command output is not kept: the tool's
result carries it), and approvals, slash commands and rewinds are recorded by their owners
through :meth:`Journal.record`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .events import Posted, TextDelta, ThinkingDelta, ToolOutput
from .jsontypes import JSON
from .store import SessionStore


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
                self.record(posted.turn_id, kind, fields)

    def record(self, turn_id: str | None, kind: str, data: JSON) -> None:
        """Add a transcript entry, after the text and thinking streamed before it."""
        if self._thought:
            text, self._thought = "".join(self._thought), []
            self.store.add_entry(self.session_id, turn_id, "assistantThinking", {"text": text})
        if self._streamed:
            text, self._streamed = "".join(self._streamed), []
            self.store.add_entry(self.session_id, turn_id, "assistantText", {"text": text})
        self.store.add_entry(self.session_id, turn_id, kind, data)
