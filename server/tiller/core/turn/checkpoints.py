"""The checkpoints around a turn: a restore cut short is finished before the turn does
anything, and the workspace is snapshotted while the first answer streams, then brought up
to date right before the first tool that may write."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from tiller.core.turn.outcomes import Failed
from tiller.workspace.checkpoints.rewind import CheckpointKeeper
from tiller.workspace.checkpoints.shadow_repo import CheckpointError

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


SNAPSHOT_WAIT_S = 300.0  # a tool that may write waits no longer for the snapshot


@dataclass
class TurnSnapshot:
    """The workspace as the turn's first write finds it. Snapshotted as the turn starts
    (while the model's first answer streams), then brought up to date right before the
    first tool that may write; tools that only read never wait. A snapshot that takes longer
    than ``SNAPSHOT_WAIT_S`` is given up (the turn goes on, and cannot be rewound).
    Fresh per turn."""

    keeper: CheckpointKeeper
    session_id: str
    turn_id: str
    say: Callable[[str], None]
    taken: asyncio.Future[None]
    given_up: bool = False
    _ready: asyncio.Future[None] | None = None

    async def before_writes(self) -> None:
        """Return once the snapshot holds the workspace as it is now (or was given up)."""
        if self.given_up:
            return
        if self._ready is None:
            self._ready = asyncio.ensure_future(self._bring_up_to_date())
        try:  # an interrupt never cuts a snapshot
            await asyncio.wait_for(asyncio.shield(self._ready), SNAPSHOT_WAIT_S)
        except TimeoutError:
            self.given_up = True
            self.say(
                "No checkpoint for this turn (it cannot be rewound): the workspace snapshot "
                f"took longer than {SNAPSHOT_WAIT_S:.0f} s"
            )

    def wanted(self) -> bool:
        return not self.given_up

    async def _bring_up_to_date(self) -> None:
        await self.taken
        try:
            await self.keeper.before_writes(self.session_id, self.turn_id, self.wanted)
        except (CheckpointError, OSError) as err:
            self.say(f"The checkpoint kept as this turn started could not be updated: {err}")


def snapshot_before(
    keeper: CheckpointKeeper | None,
    session_id: str,
    turn_id: str,
    prompt: str,
    say: Callable[[str], None],
) -> TurnSnapshot | None:
    """Start snapshotting the workspace so the turn can be rewound (a failure only warns)."""
    if keeper is None:
        return None
    turn: TurnSnapshot

    async def snapshot() -> None:
        try:
            await keeper.before_turn(session_id, turn_id, prompt, turn.wanted)
        except (CheckpointError, OSError) as err:
            say(f"No checkpoint for this turn (it cannot be rewound): {err}")

    turn = TurnSnapshot(keeper, session_id, turn_id, say, asyncio.ensure_future(snapshot()))
    return turn
