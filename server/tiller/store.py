"""Sessions on disk: SQLite (WAL) under ``dataDir``. Each message is written as it becomes
final, so a crash loses nothing already shown as finished."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .history import Message
from .protocol import JSON, MODES, TODO_STATUSES, Mode, Thinking, Todo, TodoStatus

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    workspace TEXT NOT NULL,
    title TEXT NOT NULL,
    parent_id TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    model TEXT NOT NULL,
    mode TEXT NOT NULL,
    thinking TEXT NOT NULL,
    todos TEXT NOT NULL DEFAULT '[]',
    turns INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    turn_id TEXT,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    PRIMARY KEY (session_id, idx)
);
CREATE TABLE IF NOT EXISTS entries (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    turn_id TEXT,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
"""


@dataclass(frozen=True)
class SessionRow:
    id: str
    workspace: str
    title: str
    parent_id: str | None
    created_at: float
    updated_at: float
    model: str
    mode: Mode
    thinking: Thinking
    todos: tuple[Todo, ...]
    turns: int

    def to_wire(self) -> JSON:
        wire: JSON = {
            "sessionId": self.id,
            "title": self.title,
            "createdAt": _iso(self.created_at),
            "updatedAt": _iso(self.updated_at),
            "turns": self.turns,
        }
        if self.parent_id:
            wire["parentId"] = self.parent_id
        return wire


@dataclass(frozen=True)
class Loaded:
    row: SessionRow
    messages: tuple[Message, ...]
    turn_ids: tuple[str | None, ...]


def _iso(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def _mode(value: str) -> Mode:
    return next((m for m in MODES if m == value), "default")


def _todos(raw: str) -> tuple[Todo, ...]:
    todos = []
    for item in json.loads(raw):
        status: TodoStatus = "pending"
        for known in TODO_STATUSES:
            if known == item.get("status"):
                status = known
        todos.append(Todo(str(item["content"]), status, str(item["activeForm"])))
    return tuple(todos)


class SessionStore:
    """All reads and writes of sessions; one connection, used from the event loop."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)

    def create(self, row: SessionRow) -> None:
        self.db.execute(
            "INSERT OR IGNORE INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                row.id, row.workspace, row.title, row.parent_id, row.created_at, row.updated_at,
                row.model, row.mode, json.dumps(row.thinking.to_wire()),
                json.dumps([t.to_wire() for t in row.todos]), row.turns,
            ),
        )  # fmt: skip

    def update(
        self, session_id: str, *, model: str, mode: Mode, thinking: Thinking, todos: Sequence[Todo]
    ) -> None:
        self.db.execute(
            "UPDATE sessions SET model=?, mode=?, thinking=?, todos=?, updated_at=? WHERE id=?",
            (
                model, mode, json.dumps(thinking.to_wire()),
                json.dumps([t.to_wire() for t in todos]), time.time(), session_id,
            ),
        )  # fmt: skip

    def count_turn(self, session_id: str) -> None:
        self.db.execute(
            "UPDATE sessions SET turns = turns + 1, updated_at=? WHERE id=?",
            (time.time(), session_id),
        )

    def put_message(self, session_id: str, idx: int, message: Message, turn_id: str | None) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO messages VALUES (?,?,?,?,?)",
            (session_id, idx, turn_id, message.role, json.dumps(list(message.content))),
        )

    def replace_messages(
        self, session_id: str, messages: Sequence[Message], turn_ids: Sequence[str | None]
    ) -> None:
        with self.db:
            self.db.execute("BEGIN")
            self.db.execute("DELETE FROM messages WHERE session_id=?", (session_id,))
            for idx, (message, turn_id) in enumerate(zip(messages, turn_ids, strict=True)):
                self.put_message(session_id, idx, message, turn_id)

    def add_entry(self, session_id: str, turn_id: str | None, kind: str, data: JSON) -> None:
        self.db.execute(
            "INSERT INTO entries VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM entries "
            "WHERE session_id=?), ?, ?, ?)",
            (session_id, session_id, turn_id, kind, json.dumps(data)),
        )

    def row(self, session_id: str) -> SessionRow | None:
        found = self.db.execute("SELECT * FROM sessions WHERE id=?", (session_id,)).fetchone()
        return _row(found) if found else None

    def recent(self, limit: int = 200) -> list[SessionRow]:
        rows = self.db.execute(
            "SELECT * FROM sessions ORDER BY updated_at DESC, created_at DESC LIMIT ?", (limit,)
        )
        return [_row(r) for r in rows]

    def load(self, session_id: str) -> Loaded | None:
        row = self.row(session_id)
        if row is None:
            return None
        rows = self.db.execute(
            "SELECT role, content, turn_id FROM messages WHERE session_id=? ORDER BY idx",
            (session_id,),
        ).fetchall()
        messages = tuple(
            Message.from_api({"role": r, "content": json.loads(c)}) for r, c, _ in rows
        )
        return Loaded(row, messages, tuple(t for _, _, t in rows))

    def transcript(
        self, session_id: str, before: int | None, limit: int
    ) -> tuple[list[JSON], bool]:
        """The ``limit`` entries before seq ``before`` (default: the newest), oldest first."""
        rows = self.db.execute(
            "SELECT seq, turn_id, kind, data FROM entries WHERE session_id=? AND seq < ? "
            "ORDER BY seq DESC LIMIT ?",
            (session_id, before if before is not None else 2**62, limit + 1),
        ).fetchall()
        more = len(rows) > limit
        entries = [
            {"seq": seq, "turnId": turn_id, "kind": kind, **json.loads(data)}
            for seq, turn_id, kind, data in reversed(rows[:limit])
        ]
        return entries, more

    def copy_entries(self, source: str, target: str, up_to_turn: str | None) -> None:
        """Copy the transcript of ``source`` (up to the end of ``up_to_turn``) to ``target``."""
        last = self.db.execute(
            "SELECT MAX(seq) FROM entries WHERE session_id=? AND (? IS NULL OR turn_id=?)",
            (source, up_to_turn, up_to_turn),
        ).fetchone()[0]
        self.db.execute(
            "INSERT INTO entries SELECT ?, seq, turn_id, kind, data FROM entries "
            "WHERE session_id=? AND seq <= ?",
            (target, source, last or 0),
        )

    def close(self) -> None:
        self.db.close()


def _row(r: Any) -> SessionRow:
    thinking = json.loads(r[8])
    return SessionRow(
        id=r[0], workspace=r[1], title=r[2], parent_id=r[3], created_at=r[4], updated_at=r[5],
        model=r[6], mode=_mode(r[7]),
        thinking=Thinking(bool(thinking["enabled"]), int(thinking["budgetTokens"])),
        todos=_todos(r[9]), turns=r[10],
    )  # fmt: skip
