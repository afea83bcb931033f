"""Sessions on disk: SQLite (WAL) under ``dataDir``. Each message is written as it becomes
final, so a crash loses nothing already shown as finished."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiller.jsontypes import JSON
from tiller.model.history import Message
from tiller.model.usage import NO_USAGE, ContextUse, Usage
from tiller.protocol import MODES, TODO_STATUSES, Mode, Thinking, Todo, TodoStatus
from tiller.workspace.edit_history import add_edits
from tiller.workspace.roots import WorkspaceFolder, WorkspaceRoots

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
CREATE TABLE IF NOT EXISTS checkpoints (
    session_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    prompt TEXT NOT NULL,
    created_at REAL NOT NULL,
    before_commit TEXT NOT NULL,
    after_commit TEXT,
    changed_files INTEGER NOT NULL DEFAULT 0,
    skipped TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (session_id, turn_id)
);
CREATE TABLE IF NOT EXISTS rewinds (
    undo_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    files_commit TEXT,
    messages TEXT
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


def _add_usage(db: sqlite3.Connection) -> None:
    """The usage ledger (a store written before it has no column for it)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(sessions)")}
    if "usage" not in columns:
        db.execute("ALTER TABLE sessions ADD COLUMN usage TEXT NOT NULL DEFAULT '{}'")


def _add_system(db: sqlite3.Connection) -> None:
    """The session's system prompt, fixed at its first turn (append-only, docs/protocol.md);
    NULL for sessions stored before: fixed when they are first loaded."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(sessions)")}
    if "system" not in columns:
        db.execute("ALTER TABLE sessions ADD COLUMN system TEXT")


def _add_children(db: sqlite3.Connection) -> None:
    """Subagents: a child session names the parent's turn that started it and its agent kind;
    a session keeps the agent kinds its ``task`` tool offered, fixed at its first turn (the
    tool's description is part of the prefix: append-only, like the system prompt)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(sessions)")}
    for column in ("parent_turn_id", "agent", "agents"):
        if column not in columns:
            db.execute(f"ALTER TABLE sessions ADD COLUMN {column} TEXT")


def _add_web_fetch(db: sqlite3.Connection) -> None:
    """A session keeps its web_fetch tool as the WebFetch rules shaped it at its first turn
    (core/permissions/web_fetch_rules.py): the tools list is part of the prefix, like the system
    prompt."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(sessions)")}
    if "web_fetch" not in columns:
        db.execute("ALTER TABLE sessions ADD COLUMN web_fetch TEXT")


def _add_roots(db: sqlite3.Connection) -> None:
    """The workspace folders a session worked in besides its primary one (JSON list of
    ``{"path", "name"}``): a resumed session whose client names no such folder gets them back.
    NULL: one folder, or stored before."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(sessions)")}
    if "roots" not in columns:
        db.execute("ALTER TABLE sessions ADD COLUMN roots TEXT")


# The migration ladder: step N brings a store from ``user_version`` N to N + 1. Stores written
# before the ladder existed are at 0 with some steps already done, so every step is
# idempotent. Append steps; never edit one that has shipped.
MIGRATIONS: tuple[Callable[[sqlite3.Connection], object], ...] = (
    lambda db: db.executescript(SCHEMA),
    _add_usage,
    _add_system,
    _add_children,
    add_edits,  # edit history (edit_history.py)
    _add_web_fetch,
    _add_roots,
)
STORE_VERSION = len(MIGRATIONS)


class StoreTooNew(Exception):
    """The store was written by a newer Tiller (a higher schema version than this one knows)."""


def migrate(db: sqlite3.Connection) -> int:
    """Bring the store to ``STORE_VERSION``, one step at a time (each in a transaction);
    the version it was at."""
    found = int(db.execute("PRAGMA user_version").fetchone()[0])
    if found > STORE_VERSION:
        raise StoreTooNew(
            f"the session store has schema version {found}; this Tiller knows up to "
            f"{STORE_VERSION}: upgrade Tiller, or point dataDir elsewhere"
        )
    for version in range(found, STORE_VERSION):
        with db:
            db.execute("BEGIN")
            MIGRATIONS[version](db)
            db.execute(f"PRAGMA user_version = {version + 1}")
    return found


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
    usage: Usage = NO_USAGE  # every model call of the session, priced
    context: ContextUse | None = None  # how full the context was after the last step
    system: str | None = None  # the fixed system prompt; None: not fixed yet (or stored before)
    parent_turn_id: str | None = None  # a subagent: the parent's turn that started it
    agent: str | None = None  # a subagent: its agent kind
    agents: str | None = None  # the agent kinds the task tool offers (JSON); None: not fixed yet
    web_fetch: str | None = None  # web_fetch as the rules shaped it (JSON); None: not fixed yet
    roots: tuple[WorkspaceFolder, ...] = ()  # the folders besides the primary one, last stored

    def to_wire(self) -> JSON:
        wire: JSON = {
            "sessionId": self.id,
            "title": self.title,
            "createdAt": _iso(self.created_at),
            "updatedAt": _iso(self.updated_at),
            "turns": self.turns,
            "workspace": self.workspace,
        }
        if self.parent_id:
            wire["parentId"] = self.parent_id
        if self.parent_turn_id:
            wire["parentTurnId"] = self.parent_turn_id
        if self.agent:
            wire["agent"] = self.agent
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
        migrate(self.db)

    def create(self, row: SessionRow) -> None:
        """Store a new session; one already stored is kept, only a missing title (stored
        before its first prompt) is filled in."""
        self.db.execute(
            "INSERT INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT(id) DO UPDATE SET title=excluded.title WHERE sessions.title=''",
            (
                row.id, row.workspace, row.title, row.parent_id, row.created_at, row.updated_at,
                row.model, row.mode, json.dumps(row.thinking.to_wire()),
                json.dumps([t.to_wire() for t in row.todos]), row.turns,
                json.dumps(row.usage.to_wire()), row.system, row.parent_turn_id, row.agent,
                row.agents, row.web_fetch, _roots_json(row.roots),
            ),
        )  # fmt: skip

    def set_system(self, session_id: str, system: str) -> None:
        """Fix the session's system prompt; one already fixed is never replaced."""
        self.db.execute(
            "UPDATE sessions SET system=? WHERE id=? AND system IS NULL", (system, session_id)
        )

    def set_agents(self, session_id: str, agents: str) -> None:
        """Fix the agent kinds the session's task tool offers; kinds fixed are never replaced."""
        self.db.execute(
            "UPDATE sessions SET agents=? WHERE id=? AND agents IS NULL", (agents, session_id)
        )

    def set_web_fetch(self, session_id: str, web_fetch: str) -> None:
        """Fix the session's web_fetch tool (as the rules shaped it); never replaced."""
        self.db.execute(
            "UPDATE sessions SET web_fetch=? WHERE id=? AND web_fetch IS NULL",
            (web_fetch, session_id),
        )

    def set_roots(self, session_id: str, roots: WorkspaceRoots) -> None:
        """Keep the folders ``session_id`` works in besides its primary one (the last set)."""
        self.db.execute(
            "UPDATE sessions SET roots=? WHERE id=?", (_roots_json(roots.folders[1:]), session_id)
        )

    def children(self, session_id: str) -> list[SessionRow]:
        """The subagents ``session_id`` started, oldest first."""
        rows = self.db.execute(
            "SELECT * FROM sessions WHERE parent_id=? AND parent_turn_id IS NOT NULL "
            "ORDER BY created_at",
            (session_id,),
        )
        return [_row(r) for r in rows]

    def update(
        self,
        session_id: str,
        *,
        model: str,
        mode: Mode,
        thinking: Thinking,
        todos: Sequence[Todo],
        usage: Usage,
        context: ContextUse | None = None,
    ) -> None:
        self.db.execute(
            "UPDATE sessions SET model=?, mode=?, thinking=?, todos=?, usage=?, updated_at=? "
            "WHERE id=?",
            (
                model, mode, json.dumps(thinking.to_wire()),
                json.dumps([t.to_wire() for t in todos]), _usage_json(usage, context),
                time.time(), session_id,
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

    def recent(
        self, limit: int = 200, *, workspace: str | None = None, with_empty: bool = True
    ) -> list[SessionRow]:
        """Newest first; only those of ``workspace`` when given; subagents are not listed (they
        are opened from their parent's transcript); ``with_empty`` False: nor sessions with no
        counted turn and no message."""
        rows = self.db.execute(
            "SELECT * FROM sessions WHERE (? IS NULL OR workspace=?) AND parent_turn_id IS NULL "
            "AND (? OR turns > 0 OR EXISTS "
            "(SELECT 1 FROM messages m WHERE m.session_id=sessions.id)) "
            "ORDER BY updated_at DESC, created_at DESC LIMIT ?",
            (workspace, workspace, with_empty, limit),
        )
        return [_row(r) for r in rows]

    def open_turns(self, session_id: str) -> list[str]:
        """Turns with a ``turnStarted`` entry and no ``turnEnded``: cut by a dead server."""
        rows = self.db.execute(
            "SELECT turn_id FROM entries WHERE session_id=? AND kind='turnStarted' AND turn_id "
            "NOT IN (SELECT turn_id FROM entries WHERE session_id=? AND kind='turnEnded' "
            "AND turn_id IS NOT NULL) ORDER BY seq",
            (session_id, session_id),
        )
        return [r[0] for r in rows if r[0] is not None]

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


def _usage_json(usage: Usage, context: ContextUse | None) -> str:
    return json.dumps({**usage.to_wire(), "context": context and context.to_wire()})


def _context(raw: Any) -> ContextUse | None:
    if not isinstance(raw, dict):
        return None
    used, window = raw.get("usedTokens"), raw.get("windowTokens")
    if isinstance(used, int) and isinstance(window, int):
        return ContextUse(used, window)
    return None


def _roots_json(folders: Sequence[WorkspaceFolder]) -> str | None:
    if not folders:
        return None
    return json.dumps([{"path": str(f.path), "name": f.name} for f in folders])


def _roots(raw: str | None) -> tuple[WorkspaceFolder, ...]:
    if not raw:
        return ()
    found = json.loads(raw)
    return tuple(
        WorkspaceFolder(Path(item["path"]), str(item["name"]))
        for item in (found if isinstance(found, list) else [])
        if isinstance(item, dict) and isinstance(item.get("path"), str)
    )


def _row(r: Any) -> SessionRow:
    usage = json.loads(r[11] or "{}")
    thinking = json.loads(r[8])
    return SessionRow(
        id=r[0], workspace=r[1], title=r[2], parent_id=r[3], created_at=r[4], updated_at=r[5],
        model=r[6], mode=_mode(r[7]),
        thinking=Thinking.from_wire(thinking),
        todos=_todos(r[9]), turns=r[10], usage=Usage.from_wire(usage),
        context=_context(usage.get("context")), system=r[12], parent_turn_id=r[13],
        agent=r[14], agents=r[15], web_fetch=r[16], roots=_roots(r[17]),
    )  # fmt: skip


@dataclass(frozen=True)
class CheckpointRow:
    """The workspace before (and after) one turn: commits of the shadow repository."""

    session_id: str
    turn_id: str
    prompt: str
    created_at: float
    before: str
    after: str | None
    changed_files: int
    skipped: tuple[str, ...]

    def to_wire(self) -> JSON:
        return {
            "turnId": self.turn_id,
            "prompt": self.prompt,
            "createdAt": _iso(self.created_at),
            "changedFiles": self.changed_files,
            **({"skipped": list(self.skipped)} if self.skipped else {}),
        }


@dataclass(frozen=True)
class RewindRow:
    """What ``undoRewind`` puts back: the workspace commit and/or the cut messages."""

    undo_id: str
    session_id: str
    files_commit: str | None
    messages: tuple[Message, ...] | None
    turn_ids: tuple[str | None, ...]


class CheckpointTable:
    """Checkpoint and rewind records, beside the sessions in the same database."""

    def __init__(self, store: SessionStore) -> None:
        self.db = store.db

    def add(self, row: CheckpointRow) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO checkpoints VALUES (?,?,?,?,?,?,?,?)",
            (
                row.session_id, row.turn_id, row.prompt, row.created_at, row.before, row.after,
                row.changed_files, json.dumps(list(row.skipped)),
            ),
        )  # fmt: skip

    def retake(self, session_id: str, turn_id: str, before: str, skipped: Sequence[str]) -> None:
        """The turn's workspace as its first write found it (newer than as it started)."""
        self.db.execute(
            "UPDATE checkpoints SET before_commit=?, skipped=? WHERE session_id=? AND turn_id=?",
            (before, json.dumps(list(skipped)), session_id, turn_id),
        )

    def finish(self, session_id: str, turn_id: str, after: str, changed_files: int) -> None:
        self.db.execute(
            "UPDATE checkpoints SET after_commit=?, changed_files=? "
            "WHERE session_id=? AND turn_id=?",
            (after, changed_files, session_id, turn_id),
        )

    def of_session(self, session_id: str) -> list[CheckpointRow]:
        rows = self.db.execute(
            "SELECT * FROM checkpoints WHERE session_id=? ORDER BY created_at", (session_id,)
        )
        return [_checkpoint(r) for r in rows]

    def of_turn(self, session_id: str, turn_id: str) -> CheckpointRow | None:
        """One turn's row (its primary key): each turn's snapshots look up their own row,
        never the session's every row (a long session's turn would read them all)."""
        found = self.db.execute(
            "SELECT * FROM checkpoints WHERE session_id=? AND turn_id=?", (session_id, turn_id)
        ).fetchone()
        return None if found is None else _checkpoint(found)

    def prune(self, older_than: float) -> None:
        self.db.execute("DELETE FROM checkpoints WHERE created_at < ?", (older_than,))
        self.db.execute("DELETE FROM rewinds WHERE created_at < ?", (older_than,))

    def live_commits(self, workspace: str) -> set[str]:
        """The commits still in use by the sessions of ``workspace`` (each workspace has a
        shadow repository of its own, which holds only its commits)."""
        found: set[str] = set()
        for before, after in self.db.execute(
            "SELECT c.before_commit, c.after_commit FROM checkpoints c "
            "JOIN sessions s ON s.id = c.session_id WHERE s.workspace = ?",
            (workspace,),
        ):
            found.update(c for c in (before, after) if c)
        for (commit,) in self.db.execute(
            "SELECT r.files_commit FROM rewinds r "
            "JOIN sessions s ON s.id = r.session_id WHERE s.workspace = ?",
            (workspace,),
        ):
            if commit:
                found.add(commit)
        return found

    def add_rewind(self, row: RewindRow, created_at: float) -> None:
        messages = (
            None
            if row.messages is None
            else json.dumps(
                {
                    "messages": [m.to_api() for m in row.messages],
                    "turnIds": list(row.turn_ids),
                }
            )
        )
        self.db.execute(
            "INSERT INTO rewinds VALUES (?,?,?,?,?)",
            (row.undo_id, row.session_id, created_at, row.files_commit, messages),
        )

    def last_rewind(self, session_id: str) -> str | None:
        """The undo id of the newest rewind of ``session_id`` still to be undone (``/undo``)."""
        found = self.db.execute(
            "SELECT undo_id FROM rewinds WHERE session_id=? ORDER BY created_at DESC, rowid DESC "
            "LIMIT 1",
            (session_id,),
        ).fetchone()
        return None if found is None else str(found[0])

    def drop_rewind(self, undo_id: str) -> None:
        self.db.execute("DELETE FROM rewinds WHERE undo_id=?", (undo_id,))

    def rewind(self, undo_id: str) -> RewindRow | None:
        found = self.db.execute(
            "SELECT undo_id, session_id, files_commit, messages FROM rewinds WHERE undo_id=?",
            (undo_id,),
        ).fetchone()
        if found is None:
            return None
        messages: tuple[Message, ...] | None = None
        turn_ids: tuple[str | None, ...] = ()
        if found[3] is not None:
            raw = json.loads(found[3])
            messages = tuple(Message.from_api(m) for m in raw["messages"])
            turn_ids = tuple(raw["turnIds"])
        return RewindRow(found[0], found[1], found[2], messages, turn_ids)


def _checkpoint(r: Any) -> CheckpointRow:
    return CheckpointRow(
        session_id=r[0], turn_id=r[1], prompt=r[2], created_at=r[3], before=r[4], after=r[5],
        changed_files=r[6], skipped=tuple(json.loads(r[7])),
    )  # fmt: skip
