"""What the loop asks the user, as values. The rpc layer answers them with client requests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

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
