"""A stored transcript read back as the events it was written from, for a redraw.

Every face draws a session with one renderer fed with ``tiller/event`` params; a redraw feeds
it these. An entry ``{seq, turnId, kind, ...fields}`` is the event of type ``kind``; the two
folded kinds come back as one delta each (``assistantText`` -> ``textDelta``,
``assistantThinking`` -> ``thinkingDelta``). Entries that are not objects are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from tiller.jsontypes import JSON

FOLDED = {"assistantText": "textDelta", "assistantThinking": "thinkingDelta"}


def as_events(entries: Iterable[Any], session_id: str = "") -> Iterator[JSON]:
    """``entries`` (oldest first) as ``tiller/event`` params, in order."""
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("kind"), str):
            continue
        fields = {k: v for k, v in entry.items() if k not in ("kind", "seq")}
        kind = str(entry["kind"])
        yield {
            **fields,
            "sessionId": session_id,
            "turnId": entry.get("turnId"),
            "seq": entry.get("seq", 0),
            "type": FOLDED.get(kind, kind),
        }
