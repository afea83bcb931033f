"""A session's turns: a prompt starts one now, queues behind the running one, or (``stop`` /
``cancel`` while busy) interrupts it; the turn runs as a task, and ``end_turn`` is the one place
a turn ends (once), which starts the next queued prompt. What the turn is built from is
``turn_start``; the state it runs on is the ``Session``."""

from __future__ import annotations

import asyncio
import logging

from tiller.core.session.session import (
    STOP_WORDS,
    ActiveTurn,
    Handled,
    PromptResult,
    Queued,
    Session,
    Started,
    steers_text,
)
from tiller.core.session.turn_start import announce_turn, start_turn
from tiller.core.turn.attachments import Attachment
from tiller.core.turn.checkpoints import finish_cut_restore
from tiller.core.turn.events import Notice, TurnEnded
from tiller.core.turn.loop import Turn
from tiller.core.turn.outcomes import Failed, Interrupted, TurnOutcome
from tiller.core.turn.setup import PLAIN_TURN, Pending, TurnOptions
from tiller.model import history
from tiller.model.usage import Usage
from tiller.protocol import TrailItem
from tiller.tools.registry import Toolset

log = logging.getLogger(__name__)


async def prompt(
    session: Session,
    text: str,
    options: TurnOptions = PLAIN_TURN,
    attached: tuple[Attachment, ...] = (),
) -> PromptResult:
    """Start a turn, queue behind the running one, or (``stop``/``cancel`` while busy)
    interrupt it. Slash commands are not prompts: see session_commands.py. ``attached``:
    the mentions and images sent with it (see attachments.py)."""
    if session.closed:
        return Handled("This session was closed (switched away); send the prompt again.")
    if session.busy and text.strip().lower() in STOP_WORDS:
        session.interrupt(cause="keyword")
        return Handled("Interrupted the running turn.")
    if session.busy:
        session.queue.append(Pending(text, options, attached))
        session.emit(Notice(f"Queued: {text[:80]}"))
        session.publish()
        return Queued(len(session.queue))
    return Started(start(session, text, options, attached))


def start(
    session: Session,
    text: str,
    options: TurnOptions = PLAIN_TURN,
    attached: tuple[Attachment, ...] = (),
) -> str:
    """Start a turn now (``turn_start``: its setup, snapshot and user message)."""
    turn = start_turn(session, text, options, attached)
    task = asyncio.create_task(_run(session, turn), name=f"tiller-{turn.setup.turn_id}")
    turn_id = turn.setup.turn_id
    session.active = ActiveTurn(turn_id, task)
    # A cancel that lands before the task's first step never runs its body: the
    # done-callback still ends the turn, exactly once.
    task.add_done_callback(lambda _: end_turn(session, turn_id, Interrupted(), ()))
    announce_turn(session, turn, text, attached)
    return turn_id


async def _run(session: Session, turn: Turn) -> None:
    outcome: TurnOutcome
    try:
        failed = await finish_cut_restore(session.checkpoints, session.say)
        if failed is None and isinstance(turn.setup.tools, Toolset):
            await turn.setup.tools.prepare()  # MCP tools a resumed history loaded
        outcome = failed if failed is not None else await turn.run()
    except asyncio.CancelledError:  # interrupted before the turn got going
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        outcome = Interrupted()
    except Exception as err:  # a bug in the loop must still end the turn cleanly
        log.exception("turn %s crashed", turn.setup.turn_id)
        session.messages = history.repair(session.messages)
        outcome = Failed("internal", f"Internal error: {type(err).__name__}: {err}", False)
    end_turn(session, turn.setup.turn_id, outcome, tuple(turn.trail), turn.usage, turn.kept)


def end_turn(
    session: Session,
    turn_id: str,
    outcome: TurnOutcome,
    trail: tuple[TrailItem, ...],
    usage: Usage | None = None,
    kept: bool = True,
) -> None:
    """The one place a turn ends (once): idle state first, then ``turnEnded``, then the
    next queued prompt. A turn not ``kept`` in the history (it failed before the model
    answered, or was blocked or refused) is not counted among the session's turns."""
    active = session.active
    if active is None or active.turn_id != turn_id:
        return  # already ended
    session.active = None
    session.ended_turn = turn_id
    match outcome:
        case Interrupted():
            outcome = Interrupted(active.cancel_cause or "user")
        case _:
            pass
    late = session.take_steers()
    if late:  # the turn ended before a step boundary: they run next, before the queue
        session.queue.extendleft(Pending(text) for text in reversed(late))
    session.publish()
    session.emit_in(turn_id, TurnEnded(outcome, trail, usage))
    if kept:
        session.store.count_turn(session.id)  # a statistic: after the event the user waits for
    if late:
        session.emit(Notice(f"The turn ended before it could take {steers_text(late)}: "
                         "sent as the next prompt."))  # fmt: skip
    if session.checkpoints is not None:
        session.checkpoints.after_turn(session.id, turn_id)
    if session.queue and not session.closed:
        pending = session.queue.popleft()
        start(session, pending.text, pending.options, pending.attached)
