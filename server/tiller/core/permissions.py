"""Mode x tool -> Allow | Ask | Deny: the server's permission gate (DESIGN's table)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tiller.protocol import Mode
from tiller.workspace.tools.base import ToolKind

PLAN_DENIAL = (
    "Denied: in plan mode, writes and commands that may change anything are denied until the "
    "plan is approved. Keep exploring with read-only tools, then present the plan with "
    "exit_plan_mode."
)


@dataclass(frozen=True)
class Allow:
    by: str  # what decided: "read-only", "mode acceptEdits", "session grant", ...


@dataclass(frozen=True)
class Ask:
    by: str


@dataclass(frozen=True)
class Deny:
    reason: str
    by: str


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
    """Whether a call may run, must be confirmed by the user, or is refused, and what
    decided it (shown on the tool's row in every client)."""
    if read_only:
        return Allow("read-only")
    if kind in ("read", "state", "plan_exit"):
        return Allow("tool kind")
    if kind == "agent":  # the child's own calls are judged one by one, in the parent's mode
        return Allow("subagent")
    match mode, kind:
        case "plan", _:
            return Deny(PLAN_DENIAL, "mode plan")
        case "acceptEdits", "edit":
            return Allow("mode acceptEdits")
        case _, "edit":
            return Allow("session grant") if grants.edits else Ask(f"mode {mode}")
        case _, "bash" if command is not None and command in grants.commands:
            return Allow("session grant")
        case _:
            return Ask(f"mode {mode}")


def decision_to_wire(decision: Decision) -> dict[str, str]:
    """``toolStarted.permission``: the decision and what made it."""
    match decision:
        case Allow(by=by):
            return {"decision": "allow", "by": by}
        case Ask(by=by):
            return {"decision": "ask", "by": by}
        case Deny(by=by):
            return {"decision": "deny", "by": by}
