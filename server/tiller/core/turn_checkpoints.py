"""The checkpoints around a turn: a restore cut short is finished before the turn does
anything, and the workspace is snapshotted while the first answer streams."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tiller.core.outcomes import Failed
from tiller.workspace.checkpoints import CheckpointError
from tiller.workspace.rewind import CheckpointKeeper

FINISHED_CUT_RESTORE = (
    "A rewind that was interrupted (the server stopped or the restore failed mid-way) has been "
    "finished: the workspace is as that rewind meant to leave it."
)


async def finish_cut_restore(
    keeper: CheckpointKeeper | None, say: Callable[[str], None]
) -> Failed | None:
    """A restore cut short (the server killed mid-rewind) is finished before the turn touches
    anything or ends, and reported; a turn cannot run while it cannot be."""
    if keeper is None:
        return None
    try:
        finished = await keeper.recover()
    except (CheckpointError, OSError) as err:
        why = f"A rewind cut short could not be finished, so this turn did not run: {err}"
        return Failed("internal", why, True)
    if finished:
        say(FINISHED_CUT_RESTORE)
    return None


def snapshot_before(
    keeper: CheckpointKeeper | None,
    session_id: str,
    turn_id: str,
    prompt: str,
    say: Callable[[str], None],
) -> asyncio.Future[None] | None:
    """Start snapshotting the workspace so the turn can be rewound (a failure only warns).
    It runs while the model's first response streams; the loop's tools wait for it."""
    if keeper is None:
        return None

    async def snapshot() -> None:
        try:
            await keeper.before_turn(session_id, turn_id, prompt)
        except (CheckpointError, OSError) as err:
            say(f"No checkpoint for this turn (it cannot be rewound): {err}")

    return asyncio.ensure_future(snapshot())
