"""What the loop asks the user, as values. The rpc layer answers them with client requests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from tiller.core.turn.events import (
    CheckpointDecided,
    CheckpointRequested,
    ConfirmDecided,
    ConfirmRequested,
    Event,
    PlanRequested,
)
from tiller.core.turn.scheduler import ToolCall
from tiller.jsontypes import JSON
from tiller.protocol import Mode, TrailItem
from tiller.tools.base import Preview


@dataclass(frozen=True)
class ToolAnswer:
    decision: Literal["allow", "allowSession", "allowAlways", "deny"]
    feedback: str | None = None
    asked: bool = True  # False: the client decided alone (nobody to ask, a rule of its own)


@dataclass(frozen=True)
class PlanAnswer:
    approved: bool
    feedback: str | None = None
    mode: Mode = "acceptEdits"


@dataclass(frozen=True)
class AgentRef:
    """The subagent that asks (``confirmTool.agent``): its session and its kind."""

    session_id: str
    name: str

    def to_wire(self) -> JSON:
        return {"sessionId": self.session_id, "name": self.name}


@dataclass(frozen=True)
class CheckpointStop:
    """A checkpoint answered "stop", and why when that is known: the client said
    (``tiller/checkpoint``'s ``reason``, e.g. the turn limit of ``tiller run --max-turns``), or
    the server knows (no answer in time, no client to ask). ``False`` is a stop without a
    reason: nothing says who chose it, so no text blames the user."""

    why: str | None = None


CheckpointAnswer = bool | CheckpointStop  # True: go on


def checkpoint_stop(answer: CheckpointAnswer) -> CheckpointStop | None:
    """None when the turn goes on; else the stop, with its reason if any."""
    match answer:
        case CheckpointStop():
            return answer
        case True:
            return None
        case _:
            return CheckpointStop()


DENIED_BY_DEFAULT = ToolAnswer("deny")
PLAN_NOT_APPROVED = PlanAnswer(False)


class Approver(Protocol):
    """The policy callbacks the loop awaits. Fail closed: any error means no. ``agent`` names
    the subagent whose call it is (None: the session's own)."""

    async def confirm_tool(
        self, turn_id: str, call: ToolCall, preview: Preview, agent: AgentRef | None = None
    ) -> ToolAnswer: ...

    async def approve_plan(self, turn_id: str, plan: str) -> PlanAnswer: ...

    async def checkpoint(
        self, turn_id: str, tools_used: int, trail: Sequence[TrailItem]
    ) -> CheckpointAnswer: ...


class Poster(Protocol):
    """Where the questions and answers go as events (the session: journaled, then sent)."""

    def emit_in(self, turn_id: str | None, event: Event) -> None: ...


@dataclass(frozen=True)
class PostingApprover:
    """Asks ``inner``, and posts every question before it is asked and every answer once it is
    given, so the event log (and a chat redrawn from it) holds the same cards as the live one:
    plans with their text, confirmations with their preview summary, checkpoints."""

    inner: Approver
    poster: Poster
    turn_id: str

    async def confirm_tool(
        self, turn_id: str, call: ToolCall, preview: Preview, agent: AgentRef | None = None
    ) -> ToolAnswer:
        summary = preview_summary(preview)
        self.poster.emit_in(self.turn_id, ConfirmRequested(call.id, call.name, summary))
        answer = await self.inner.confirm_tool(turn_id, call, preview, agent)
        decided = ConfirmDecided(call.id, answer.decision, answer.feedback or None)
        self.poster.emit_in(self.turn_id, decided)
        return answer

    async def approve_plan(self, turn_id: str, plan: str) -> PlanAnswer:
        self.poster.emit_in(self.turn_id, PlanRequested(plan))
        return await self.inner.approve_plan(turn_id, plan)  # the loop emits planDecided

    async def checkpoint(
        self, turn_id: str, tools_used: int, trail: Sequence[TrailItem]
    ) -> CheckpointAnswer:
        self.poster.emit_in(self.turn_id, CheckpointRequested(tools_used))
        answer = await self.inner.checkpoint(turn_id, tools_used, trail)
        self.poster.emit_in(self.turn_id, CheckpointDecided(checkpoint_stop(answer) is None))
        return answer


PREVIEW_SUMMARY_CHARS = 2000


def preview_summary(preview: Preview) -> JSON:
    """What the transcript keeps of a confirmation preview: the kind, the path or command,
    and a bounded excerpt (a diff's full before/after would bloat the store)."""
    wire = preview.to_wire()
    return {
        key: value[:PREVIEW_SUMMARY_CHARS] if isinstance(value, str) else value
        for key, value in wire.items()
        if key not in ("before", "after")
    }
