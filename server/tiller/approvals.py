"""What the loop asks the user, as values. The rpc layer answers them with client requests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from .jsontypes import JSON
from .protocol import Mode, TrailItem
from .scheduler import ToolCall
from .tools.base import Preview


@dataclass(frozen=True)
class ToolAnswer:
    decision: Literal["allow", "allowSession", "deny"]
    feedback: str | None = None


@dataclass(frozen=True)
class PlanAnswer:
    approved: bool
    feedback: str | None = None
    mode: Mode = "acceptEdits"


DENIED_BY_DEFAULT = ToolAnswer("deny")
PLAN_NOT_APPROVED = PlanAnswer(False)


class Approver(Protocol):
    """The policy callbacks the loop awaits. Fail closed: any error means no."""

    async def confirm_tool(self, turn_id: str, call: ToolCall, preview: Preview) -> ToolAnswer: ...

    async def approve_plan(self, turn_id: str, plan: str) -> PlanAnswer: ...

    async def checkpoint(
        self, turn_id: str, tools_used: int, trail: Sequence[TrailItem]
    ) -> bool: ...


class Recorder(Protocol):
    """Where the transcript goes (the session)."""

    def record(self, turn_id: str | None, kind: str, data: JSON) -> None: ...


@dataclass(frozen=True)
class RecordingApprover:
    """Asks ``inner`` and keeps every question and answer in the transcript, so a chat redrawn
    from it shows the same cards as the live one (plans with their text, confirmations with
    their preview summary, checkpoints)."""

    inner: Approver
    recorder: Recorder
    turn_id: str

    async def confirm_tool(self, turn_id: str, call: ToolCall, preview: Preview) -> ToolAnswer:
        self.recorder.record(
            self.turn_id,
            "confirmRequested",
            {"toolUseId": call.id, "name": call.name, "preview": preview_summary(preview)},
        )
        answer = await self.inner.confirm_tool(turn_id, call, preview)
        decided: JSON = {"toolUseId": call.id, "decision": answer.decision}
        if answer.feedback:
            decided["feedback"] = answer.feedback
        self.recorder.record(self.turn_id, "confirmDecided", decided)
        return answer

    async def approve_plan(self, turn_id: str, plan: str) -> PlanAnswer:
        self.recorder.record(self.turn_id, "planRequested", {"plan": plan})
        return await self.inner.approve_plan(turn_id, plan)  # the loop emits planDecided

    async def checkpoint(self, turn_id: str, tools_used: int, trail: Sequence[TrailItem]) -> bool:
        self.recorder.record(self.turn_id, "checkpointRequested", {"toolsUsed": tools_used})
        go_on = await self.inner.checkpoint(turn_id, tools_used, trail)
        self.recorder.record(self.turn_id, "checkpointDecided", {"continue": go_on})
        return go_on


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
