"""Edit history: every finished ``write_file`` / ``edit_file`` keeps its file before and after,
beside the sessions in the same database, so its diff can be opened long after (the chat's
``+12 −3`` of an old edit), after a restart too. Each text is kept up to `MAX_TEXT_BYTES`
(``complete`` says whether it was cut). Looked up by the tool call's id, unique across
sessions, so a fork's copied rows find their parent's edits."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Final

from tiller.jsontypes import JSON

MAX_TEXT_BYTES: Final = 256 * 1024

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS edits (
    tool_use_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    path TEXT NOT NULL,
    before BLOB,
    after BLOB NOT NULL,
    line INTEGER NOT NULL,
    complete INTEGER NOT NULL
);
"""


def add_edits(db: sqlite3.Connection) -> None:
    """The migration step that makes the table (idempotent, as every step is)."""
    db.executescript(SCHEMA)


@dataclass(frozen=True)
class EditTexts:
    """A finished edit's file before and after, kept so its diff can be opened later
    (``before`` None: the edit created the file); ``line``: its first changed line, 1-based."""

    path: str
    before: str | None
    after: str
    line: int

    @staticmethod
    def of(path: str, before: str | None, after: str) -> EditTexts:
        old = before or ""
        same = next(
            (i for i, (x, y) in enumerate(zip(old, after, strict=False)) if x != y),
            min(len(old), len(after)),
        )
        return EditTexts(path, before, after, after.count("\n", 0, same) + 1)


@dataclass(frozen=True)
class KeptEdit:
    texts: EditTexts
    complete: bool  # False: a text was longer than MAX_TEXT_BYTES and is cut

    def to_wire(self) -> JSON:
        texts = self.texts
        return {
            "path": texts.path,
            "before": texts.before,
            "after": texts.after,
            "line": texts.line,
            "complete": self.complete,
        }


def _stored(text: str) -> tuple[bytes, bool]:
    data = text.encode("utf-8", errors="surrogateescape")  # edit_file keeps odd bytes so
    return data[:MAX_TEXT_BYTES], len(data) <= MAX_TEXT_BYTES


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


class EditHistory:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def keep(self, session_id: str, tool_use_id: str, texts: EditTexts) -> None:
        after, after_whole = _stored(texts.after)
        before, before_whole = _stored(texts.before) if texts.before is not None else (None, True)
        self.db.execute(
            "INSERT OR REPLACE INTO edits VALUES (?,?,?,?,?,?,?)",
            (tool_use_id, session_id, texts.path, before, after, texts.line,
             int(after_whole and before_whole)),
        )  # fmt: skip

    def find(self, tool_use_id: str) -> KeptEdit | None:
        row = self.db.execute(
            "SELECT path, before, after, line, complete FROM edits WHERE tool_use_id=?",
            (tool_use_id,),
        ).fetchone()
        if row is None:
            return None
        path, before, after, line, complete = row
        texts = EditTexts(path, None if before is None else _text(before), _text(after), line)
        return KeptEdit(texts, bool(complete))
