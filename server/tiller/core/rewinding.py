"""Rewind and its undo: the workspace and/or the conversation put back to before a turn
(from the checkpoints taken around every turn), and the rewind itself undone."""

from __future__ import annotations

import time

from tiller.core import history
from tiller.core.events import RewindUndone, Rewound
from tiller.core.history import Message
from tiller.core.session import Session, new_id
from tiller.core.sessions import carried_turn_ids
from tiller.errors import InvalidParams
from tiller.jsontypes import JSON
from tiller.workspace.checkpoints import Changes
from tiller.workspace.rewind import CheckpointKeeper
from tiller.workspace.store import CheckpointRow, RewindRow


def keeper_of(session: Session) -> CheckpointKeeper:
    if session.checkpoints is None:
        raise InvalidParams("Checkpoints are off: git is not installed (install it, restart).")
    return session.checkpoints


async def list_checkpoints(session: Session, session_id: str | None = None) -> list[CheckpointRow]:
    keeper = keeper_of(session)
    await keeper.settled()  # the last turn's closing snapshot counts its changed files
    return keeper.of_session(session_id or session.id)


async def rewind(
    session: Session, turn_id: str, *, files: bool, conversation: bool, dry_run: bool = False
) -> JSON:
    """Put the workspace and/or the conversation back to before ``turn_id``. Refused while
    a turn runs (interrupt first). The answer's ``undoId`` undoes the rewind."""
    keeper = keeper_of(session)
    if session.busy:
        raise InvalidParams("A turn is running: interrupt it first, then rewind.")
    if not files and not conversation:
        raise InvalidParams("nothing to rewind: set 'files' and/or 'conversation' to true")
    await keeper.settled()
    rows = keeper.of_session(session.id)
    index = next((i for i, row in enumerate(rows) if row.turn_id == turn_id), None)
    if index is None:
        raise InvalidParams(f"no checkpoint for turnId {turn_id!r} in this session")
    if dry_run:
        if not files:
            return {**Changes().to_wire(), "userChanged": []}
        preview = await keeper.preview(rows, index)
        return {**preview.changes.to_wire(), "userChanged": list(preview.user_changed)}
    undo_commit = await keeper.snapshot_now(f"before rewinding to {turn_id}") if files else None
    changes = await keeper.restore(rows[index].before) if files else Changes()
    saved: tuple[Message, ...] | None = None
    saved_ids: tuple[str | None, ...] = ()
    if conversation:
        loaded = session.store.load(session.id)
        stored, ids = (loaded.messages, loaded.turn_ids) if loaded else (session.messages, ())
        cut = next((i for i, t in enumerate(ids) if t == turn_id), len(stored))
        saved, saved_ids = stored, ids
        session.messages = history.repair(stored[:cut])
        kept = carried_turn_ids(stored[:cut], ids[:cut], session.messages)
        session.store.replace_messages(session.id, session.messages, kept)
    undo_id = new_id("undo")
    keeper.table.add_rewind(
        RewindRow(undo_id, session.id, undo_commit, saved, saved_ids), time.time()
    )
    session.emit_in(turn_id, Rewound(turn_id, files, conversation, undo_id, changes))
    return {**changes.to_wire(), "undoId": undo_id}


async def rewind_command(session: Session, turn_id: str | None) -> str:
    """``/rewind [turnId]``: files and conversation, to before the turn (default: last)."""
    try:
        rows = await list_checkpoints(session)
        target = turn_id or (rows[-1].turn_id if rows else None)
        if target is None:
            return "Nothing to rewind yet: no turn has a checkpoint in this session."
        done = await rewind(session, target, files=True, conversation=True)
    except InvalidParams as err:
        return err.message
    counts = ", ".join(f"{len(done[k])} {k}" for k in ("changed", "added", "removed"))
    return (
        f"Rewound to before {target}: files {counts} (as seen from now); the conversation "
        f"ends before that turn. Undo with tiller/undoRewind {done['undoId']}."
    )


async def undo_rewind(session: Session, undo_id: str) -> JSON:
    keeper = keeper_of(session)
    if session.busy:
        raise InvalidParams("A turn is running: interrupt it first, then undo the rewind.")
    row = keeper.table.rewind(undo_id)
    if row is None:
        raise InvalidParams(f"unknown undoId {undo_id!r} (already undone, or expired)")
    if row.session_id != session.id:
        raise InvalidParams(f"undoId {undo_id!r} belongs to session {row.session_id}")
    await keeper.settled()
    changes = await keeper.restore(row.files_commit) if row.files_commit else Changes()
    if row.messages is not None:
        session.messages = row.messages
        session.store.replace_messages(session.id, row.messages, row.turn_ids)
    keeper.table.drop_rewind(undo_id)
    session.emit_in(None, RewindUndone(undo_id, changes))
    return changes.to_wire()
