"""What ``session/load`` replays of a stored transcript: the last ``REPLAY_PROMPTS`` prompts
and what followed them, read from the newest entry back, so a load costs the same at turn 10
as at turn 400 (ACP has no paging of a loaded session). A line before them says that earlier
turns are left out.

Not "since the last compaction": a compaction keeps the last turns verbatim (the model still
sees them), and the transcript does not say which, so cutting at it would hide what the model
has.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from tiller.faces.acp.updates import is_custom_command
from tiller.jsontypes import JSON
from tiller.workspace.store import SessionStore

REPLAY_PROMPTS: Final = 50
PAGE: Final = 500  # transcript entries read at a time, newest first
LEFT_OUT: Final = "Earlier turns are not shown here: a loaded session shows its last {n} prompts."


@dataclass(frozen=True)
class Recent:
    """The entries to replay (oldest first) and what was left out before them ("": nothing)."""

    entries: list[JSON]
    left_out: str = ""


def recent_transcript(store: SessionStore, session_id: str) -> Recent:
    return recent(newest_first(store, session_id), REPLAY_PROMPTS)


def newest_first(store: SessionStore, session_id: str) -> Iterator[JSON]:
    """The transcript's entries from the newest back, a page at a time (read only as far as
    they are consumed)."""
    before: int | None = None
    while True:
        page, more = store.transcript(session_id, before, PAGE)
        yield from reversed(page)
        if not more or not page:
            return
        before = int(page[0]["seq"])


def recent(newest: Iterable[JSON], prompts: int) -> Recent:
    """The entries from the ``prompts``-th prompt from the end on (a prompt: a turn the user
    started, or a slash command; a custom command and the turn it starts are one)."""
    entries = iter(newest)
    kept: list[JSON] = []
    counted = 0
    for entry in entries:
        kept.append(entry)
        if _prompt(entry):
            counted += 1
            if counted == prompts:
                older = _with_its_command(entry, entries, kept)
                return Recent(kept[::-1], LEFT_OUT.format(n=prompts) if older else "")
    return Recent(kept[::-1])


def _with_its_command(start: JSON, older: Iterator[JSON], kept: list[JSON]) -> bool:
    """Keep the custom command's event that started the turn ``start`` opens, if one did
    (notices may lie between them). Whether anything older is left out."""
    if start.get("kind") != "turnStarted":
        return next(older, None) is not None
    for entry in older:
        if entry.get("kind") == "notice":
            continue
        if entry.get("kind") == "command" and is_custom_command(entry):
            kept.append(entry)
            return next(older, None) is not None
        return True
    return False


def _prompt(entry: JSON) -> bool:
    if "parentTurnId" in entry:  # a subagent's
        return False
    kind = entry.get("kind")
    return kind == "turnStarted" or (kind == "command" and not is_custom_command(entry))
