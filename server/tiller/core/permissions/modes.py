"""Mode x tool -> Allow | Ask | Deny: the server's permission gate (DESIGN's table)."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tiller.core.permissions.call_rules import NOT_RULED, Ruled
from tiller.core.permissions.rules import Rule
from tiller.protocol import Mode
from tiller.tools.base import ToolKind

PLAN_DENIAL = (
    "Denied: in plan mode, writes and commands that may change anything are denied until the "
    "plan is approved. Keep exploring with read-only tools, then present the plan with "
    "exit_plan_mode."
)

MCP_PLAN_DENIAL = (
    "Denied: in plan mode an MCP tool runs only if the user allowed it as read-only "
    "(the mcpReadOnly setting). Plan with the tools you have, then present the plan with "
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
    """What the user allowed for the rest of the session (``allowSession``): every edit, and
    rules of the session scope (for a command: exactly the segments the card showed)."""

    edits: bool = False
    rules: tuple[Rule, ...] = ()
    mcp_tools: frozenset[str] = frozenset()  # MCP tools allowed for the session

    def allow_edits(self) -> Grants:
        return replace(self, edits=True)

    def allow_rules(self, rules: tuple[Rule, ...]) -> Grants:
        new = tuple(r for r in rules if r not in self.rules)
        return replace(self, rules=(*self.rules, *new))

    def allow_mcp_tool(self, name: str) -> Grants:
        return replace(self, mcp_tools=self.mcp_tools | {name})


RULES_FILE = "protected: writes a permission rules file"
_WRITES = frozenset({"edit", "bash"})


@dataclass(frozen=True)
class McpRules:
    """What the user allowed of MCP tools, by name pattern (``mcp__time__*``): ``allow`` runs
    without asking outside plan mode; ``read_only`` also in plan mode (and concurrently)."""

    allow: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def judge_mcp(
    name: str, mode: Mode, grants: Grants, rules: McpRules, ruled: Ruled = NOT_RULED
) -> Decision:
    """An MCP tool call. A server's own hints (``readOnlyHint``) are claims of an untrusted
    party and count for nothing: only the user's rules and settings and session grants allow.
    A deny rule wins; then an ask rule asks (also for an ``mcpReadOnly`` tool: an ask rule,
    like the stand-in of a deny rule that cannot be read, asks whatever a read-only claim
    says), except that plan mode denies what ``mcpReadOnly`` does not name; then
    ``mcpReadOnly`` (runs in every mode); plan mode denies the rest; then an allow rule,
    ``mcpAllow`` or the session's grant; else ask."""
    read_only = _matches(name, rules.read_only)
    match ruled.effect:
        case "deny":
            return Deny(f"Denied by the permission {ruled.by}.", str(ruled.by))
        case "ask" if mode == "plan" and not read_only:
            return Deny(MCP_PLAN_DENIAL, "mode plan")
        case "ask":
            return Ask(str(ruled.by))
        case _ if read_only:
            return Allow("mcpReadOnly")
        case _ if mode == "plan":
            return Deny(MCP_PLAN_DENIAL, "mode plan")
        case "allow":
            return Allow(str(ruled.by))
        case _ if _matches(name, rules.allow):
            return Allow("mcpAllow")
        case _ if name in grants.mcp_tools:
            return Allow("session grant")
        case _:
            return Ask(f"mode {mode}")


def decide(
    mode: Mode, kind: ToolKind, *, read_only: bool, ruled: Ruled, grants: Grants
) -> Decision:
    """Whether a call may run, must be confirmed by the user, or is refused, and what
    decided it (shown on the tool's row in every client).

    A deny rule wins over everything; a write to a permission-rules file is asked whatever
    the mode or rules; then an ask rule, whatever the read-only proof, the tool's kind, allow
    rules or the mode say (plan mode still denies a write). The stand-in of a deny rule that
    cannot be read is such an ask rule (``permission_rules.unreadable_deny``), so a call of
    its tool is at least asked and ``by`` names the broken rule. Then the read-only proof and
    read tools; then an allow rule (never in plan mode for a write: rules never give more
    than plan allows); then the mode and the session's edit grant."""
    writes = kind in _WRITES and not read_only
    match ruled.effect:
        case "deny":
            return Deny(f"Denied by the permission {ruled.by}.", str(ruled.by))
        case _ if ruled.protected:
            return Deny(PLAN_DENIAL, "mode plan") if mode == "plan" else Ask(RULES_FILE)
        case "ask" if mode == "plan" and writes:
            return Deny(PLAN_DENIAL, "mode plan")
        case "ask":
            return Ask(str(ruled.by))
        case _:
            pass
    if read_only:
        return Allow("read-only")
    if kind in ("read", "state", "plan_exit"):
        return Allow("tool kind")
    if kind == "agent":  # the child's own calls are judged one by one, in the parent's mode
        return Allow("subagent")
    match mode, kind, ruled.effect:
        case "plan", _, _:
            return Deny(PLAN_DENIAL, "mode plan")
        case _, _, "allow":
            return Allow(str(ruled.by))
        case "acceptEdits", "edit", _:
            return Allow("mode acceptEdits")
        case _, "edit", _:
            return Allow("session grant") if grants.edits else Ask(f"mode {mode}")
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
