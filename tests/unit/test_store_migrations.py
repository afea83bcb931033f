"""The session store's schema is versioned (PRAGMA user_version) and migrated step by step:
stores written by earlier versions open, and a store from a newer Tiller is refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tiller.workspace.roots import WorkspaceRoots
from tiller.workspace.store import STORE_VERSION, SessionStore, StoreTooNew

# The schema as Tiller wrote it before the ladder (user_version 0), before the usage ledger.
UNVERSIONED_BEFORE_USAGE = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, title TEXT NOT NULL,
    parent_id TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL, model TEXT NOT NULL,
    mode TEXT NOT NULL, thinking TEXT NOT NULL, todos TEXT NOT NULL DEFAULT '[]',
    turns INTEGER NOT NULL DEFAULT 0);
CREATE TABLE messages (session_id TEXT NOT NULL, idx INTEGER NOT NULL, turn_id TEXT,
    role TEXT NOT NULL, content TEXT NOT NULL, PRIMARY KEY (session_id, idx));
INSERT INTO sessions VALUES ('ses_old', '/ws', 'an old one', NULL, 1.0, 2.0,
    'claude-sonnet-5-5', 'plan', '{"enabled": false}', '[]', 1);
INSERT INTO messages VALUES ('ses_old', 0, 'turn_1', 'user', '[{"type": "text", "text": "hi"}]');
"""


def test_a_store_written_before_the_ladder_opens_and_keeps_its_sessions(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(UNVERSIONED_BEFORE_USAGE)
    store = SessionStore(path)
    loaded = store.load("ses_old")
    assert loaded is not None
    assert loaded.row.title == "an old one" and loaded.row.mode == "plan"
    assert loaded.turn_ids == ("turn_1",)
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == STORE_VERSION


def test_reopening_a_current_store_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    SessionStore(path).db.close()
    store = SessionStore(path)
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == STORE_VERSION


def test_a_store_from_a_newer_tiller_is_refused_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {STORE_VERSION + 1}")
    with pytest.raises(StoreTooNew, match="upgrade Tiller"):
        SessionStore(path)


def test_a_store_before_roots_gains_them_and_keeps_its_sessions(tmp_path: Path) -> None:
    """The roots step (issue 22 item 5): sessions stored before have no roots (one folder);
    the folders set later come back as stored, names included."""
    path = tmp_path / "sessions.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(UNVERSIONED_BEFORE_USAGE)
    store = SessionStore(path)
    loaded = store.load("ses_old")
    assert loaded is not None and loaded.row.roots == ()
    roots = WorkspaceRoots.named([(tmp_path, None), (tmp_path / "api", "backend")])
    store.set_roots("ses_old", roots)
    again = store.row("ses_old")
    assert again is not None and again.roots == roots.folders[1:]
    store.set_roots("ses_old", WorkspaceRoots.of(tmp_path))  # one folder again: none kept
    last = store.row("ses_old")
    assert last is not None and last.roots == ()
