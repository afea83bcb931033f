"""Mode x tool -> Allow | Ask | Deny: the server's permission gate (DESIGN's table)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .protocol import Mode
from .tools.base import ToolKind

PLAN_DENIAL = (
    "Denied: in plan mode, writes and commands that may change anything are denied until the "
    "plan is approved. Keep exploring with read-only tools, then present the plan with "
    "exit_plan_mode."
)


@dataclass(frozen=True)
class Allow:
    pass


@dataclass(frozen=True)
class Ask:
    pass


@dataclass(frozen=True)
class Deny:
    reason: str


Decision = Allow | Ask | Deny


@dataclass(frozen=True)
class Grants:
    """What the user allowed for the rest of the session (``allowSession``)."""

    edits: bool = False
    commands: frozenset[str] = frozenset()

    def allow_edits(self) -> Grants:
        return replace(self, edits=True)

    def allow_command(self, command: str) -> Grants:
        return replace(self, commands=self.commands | {command})


def decide(
    mode: Mode, kind: ToolKind, *, read_only: bool, command: str | None, grants: Grants
) -> Decision:
    """Whether a call may run, must be confirmed by the user, or is refused."""
    if read_only or kind in ("read", "state", "plan_exit"):
        return Allow()
    match mode, kind:
        case "plan", _:
            return Deny(PLAN_DENIAL)
        case "acceptEdits", "edit":
            return Allow()
        case _, "edit":
            return Allow() if grants.edits else Ask()
        case _, "bash":
            return Allow() if command is not None and command in grants.commands else Ask()
        case _:
            return Ask()
