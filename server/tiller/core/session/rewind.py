"""Rewind and its undo: the workspace and/or the conversation put back to before a turn
(from the checkpoints taken around every turn), and the rewind itself undone.

Every answer and event says what the operation does to each file: ``reverted`` (its content
brought back), ``deleted``, ``restored`` (re-created); see ``Changes``. A conversation rewind
(and its undo) also puts the todo board back: see ``board_after``."""

from __future__ import annotations

import time
from collections.abc import Sequence

from tiller.core.session.session import Session, new_id
from tiller.core.session.sessions import carried_turn_ids
from tiller.core.turn.events import RewindUndone, Rewound
from tiller.errors import InvalidParams, ToolInputError
from tiller.jsontypes import JSON
from tiller.model import history
from tiller.model.history import Message
from tiller.protocol import Todo
from tiller.tools.todo import parse_todos
from tiller.workspace.checkpoints.rewind import CheckpointKeeper
from tiller.workspace.checkpoints.shadow_repo import Changes
from tiller.workspace.store import CheckpointRow, RewindRow

NAMES_SHOWN = 5  # file names per effect in a one-line answer
NAMES_LISTED = 20  # in a dry run's list


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
    if files:
        refuse_absent_roots(keeper, rows[index].before, "rewind the files of this checkpoint")
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
        saved, saved_ids = cut_conversation(session, turn_id)
    undo_id = new_id("undo")
    keeper.table.add_rewind(
        RewindRow(undo_id, session.id, undo_commit, saved, saved_ids), time.time()
    )
    session.emit_in(turn_id, Rewound(turn_id, files, conversation, undo_id, changes))
    if saved is not None:
        _put_board_back(session, saved, session.messages)
    return {**changes.to_wire(), "undoId": undo_id}


def refuse_absent_roots(keeper: CheckpointKeeper, commit: str, doing: str) -> None:
    """InvalidParams, before anything is changed, when ``commit`` covers a workspace folder
    that is not one of the session's roots now."""
    missing = keeper.absent_roots(commit)
    if missing:
        folders = ", ".join(missing)
        raise InvalidParams(
            f"Cannot {doing}: it covers the workspace folder {folders}, which is not in the "
            "workspace now. Add that folder again (VS Code: Add Folder to Workspace; "
            "tiller run/chat: --add-dir; ACP: additionalDirectories) and retry, or rewind "
            "only the conversation. Nothing was changed."
        )


def cut_conversation(
    session: Session, turn_id: str
) -> tuple[tuple[Message, ...], tuple[str | None, ...]]:
    """Cut the history before ``turn_id``; the history and turn ids it had.

    What is kept is a true prefix of what was sent (``repair`` can only add results after
    the last message, where no thinking block follows), under the same system prompt: every
    thinking block kept stays valid and none is dropped (the append-only rule,
    docs/protocol.md). Undoing the rewind puts back a history that was itself sent, so that
    holds for it too."""
    loaded = session.store.load(session.id)
    stored, ids = (loaded.messages, loaded.turn_ids) if loaded else (session.messages, ())
    cut = next((i for i, t in enumerate(ids) if t == turn_id), len(stored))
    session.messages = history.repair(stored[:cut])
    kept = carried_turn_ids(stored[:cut], ids[:cut], session.messages)
    session.store.replace_messages(session.id, session.messages, kept)
    return stored, ids


async def undo_rewind(session: Session, undo_id: str) -> JSON:
    keeper = keeper_of(session)
    if session.busy:
        raise InvalidParams("A turn is running: interrupt it first, then undo the rewind.")
    row = keeper.table.rewind(undo_id)
    if row is None:
        raise InvalidParams(f"nothing to undo for {undo_id!r}: unknown, already undone, or expired")
    if row.session_id != session.id:
        raise InvalidParams(f"the rewind {undo_id!r} belongs to session {row.session_id}")
    await keeper.settled()
    if row.files_commit:
        refuse_absent_roots(keeper, row.files_commit, "undo this rewind")
    changes = await keeper.restore(row.files_commit) if row.files_commit else Changes()
    replaced = session.messages
    if row.messages is not None:
        session.messages = row.messages
        session.store.replace_messages(session.id, row.messages, row.turn_ids)
    keeper.table.drop_rewind(undo_id)
    session.emit_in(None, RewindUndone(undo_id, changes))
    if row.messages is not None:
        _put_board_back(session, replaced, row.messages)
    return changes.to_wire()


# --- the todo board follows the conversation --------------------------------------------------


def last_board(messages: Sequence[Message]) -> tuple[Todo, ...] | None:
    """The board the last successful ``todo_write`` in ``messages`` wrote; None when none did
    (a failed, denied or interrupted call wrote nothing)."""
    failed = {
        block.get("tool_use_id")
        for message in messages
        for block in message.content
        if block.get("type") == "tool_result" and block.get("is_error")
    }
    for message in reversed(messages):
        for block in reversed(message.content):
            if (
                block.get("type") != "tool_use"
                or block.get("name") != "todo_write"
                or block.get("id") in failed
            ):
                continue
            tool_input = block.get("input")
            try:
                return parse_todos(tool_input if isinstance(tool_input, dict) else {})
            except ToolInputError:
                continue
    return None


def board_after(
    old: Sequence[Message], new: Sequence[Message], current: tuple[Todo, ...]
) -> tuple[Todo, ...]:
    """The todo board once the history ``old`` is replaced by ``new`` (a conversation rewind,
    or its undo). Unchanged unless a message that goes or comes wrote it; then the board the
    last ``todo_write`` of ``new`` wrote, or empty when ``new`` has none (never written, or
    compacted away: the board from before is then unknown, so it is cleared)."""
    same = 0
    while same < min(len(old), len(new)) and old[same] == new[same]:
        same += 1
    if last_board(old[same:]) is None and last_board(new[same:]) is None:
        return current
    return last_board(new) or ()


def _put_board_back(session: Session, old: Sequence[Message], new: Sequence[Message]) -> None:
    board = board_after(old, new, session.todos)
    if board != session.todos:
        session.replace_todos(board)


# --- slash commands ---------------------------------------------------------------------------


async def rewind_command(session: Session, turn_id: str | None, *, dry_run: bool = False) -> str:
    """``/rewind [--dry-run] [turnId]``: files and conversation, to before the turn (default:
    the last); the dry run lists what it would do and changes nothing."""
    try:
        rows = await list_checkpoints(session)
        if turn_id is None and not rows:
            return "Nothing to rewind yet: no turn has a checkpoint in this session."
        row = rows[-1] if turn_id is None else next((r for r in rows if r.turn_id == turn_id), None)
        if row is None:
            return f"No checkpoint for turn {turn_id!r} in this session (see /checkpoints)."
        target = row.turn_id
        done = await rewind(session, target, files=True, conversation=True, dry_run=dry_run)
    except InvalidParams as err:
        return err.message
    where = f"before {target} (“{_first_line(row.prompt)}”)"
    if dry_run:
        return _dry_run_text(where, target, done)
    return (
        f"Rewound to {where}: {_effects_line(done)}. The conversation now ends before that "
        f"turn. Undo with /undo (or /undo {done['undoId']})."
    )


async def undo_command(session: Session, undo_id: str | None) -> str:
    """``/undo [undoId]``: undo a rewind of this session (default: the last one)."""
    try:
        wanted = undo_id or keeper_of(session).table.last_rewind(session.id)
        if wanted is None:
            return "Nothing to undo: no rewind of this session is left to undo."
        done = await undo_rewind(session, wanted)
    except InvalidParams as err:
        return err.message
    return f"Undid the rewind {wanted}: {_effects_line(done)}."


def _first_line(text: str, limit: int = 60) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _files(answer: JSON, key: str) -> list[str]:
    value = answer.get(key)
    return [str(v) for v in value] if isinstance(value, list) else []


def _names(files: Sequence[str], limit: int) -> str:
    shown = ", ".join(files[:limit])
    return shown + (f" and {len(files) - limit} more" if len(files) > limit else "")


def _effects_line(answer: JSON) -> str:
    """``deleted NOTES.md, fib.py; reverted app.py`` or ``no file changed``."""
    said = [
        f"{verb} {_names(files, NAMES_SHOWN)}"
        for verb in ("reverted", "deleted", "restored")
        if (files := _files(answer, verb))
    ]
    return "; ".join(said) or "no file changed"


def _dry_run_text(where: str, target: str, answer: JSON) -> str:
    lines = [f"Dry run: nothing was changed. Rewinding to {where} would:"]
    for verb, key in (("revert", "reverted"), ("delete", "deleted"), ("restore", "restored")):
        if files := _files(answer, key):
            lines.append(f"  {verb} {len(files)} file(s): {_names(files, NAMES_LISTED)}")
    if len(lines) == 1:
        lines.append("  change no file")
    lines.append("  end the conversation before that turn")
    if yours := _files(answer, "userChanged"):
        lines.append(
            f"Changed since that turn by someone other than the agent (the rewind undoes "
            f"that too): {_names(yours, NAMES_LISTED)}"
        )
    lines.append(f"Do it with /rewind {target}; /undo undoes it.")
    return "\n".join(lines)
