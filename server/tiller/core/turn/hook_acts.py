"""What hooks did, as ``hookActed`` events (journaled, drawn by every face)."""

from __future__ import annotations

from tiller.core.hooks.config import HookEvent
from tiller.core.hooks.replies import Verdict
from tiller.core.turn.events import HookActed
from tiller.protocol import HookOutcome

_PERMISSION: dict[str, HookOutcome] = {"allow": "allowed", "deny": "denied", "ask": "asked"}


def hook_acts(
    event: HookEvent,
    verdict: Verdict,
    tool_use_id: str | None = None,
    *,
    rewrote: bool = False,
    blocked: HookOutcome = "fedBack",
) -> list[HookActed]:
    """An event per thing the hooks did: their messages for the user, then each act.
    ``blocked``: what a block means for this event (fedBack, blockedPrompt, continued)."""
    who = ", ".join(dict.fromkeys(verdict.acted)) or "hook"

    def act(outcome: HookOutcome, message: str) -> HookActed:
        return HookActed(event, who, outcome, message, tool_use_id)

    acts = [HookActed(event, who, "message", m, tool_use_id) for m in verdict.messages]
    if verdict.permission is not None:
        reason = verdict.reason or ""
        acts.append(act(_PERMISSION[verdict.permission], reason))
    if rewrote:
        acts.append(act("rewroteInput", "the call runs with the hook's input"))
    if verdict.blocked and verdict.permission is None:
        acts.append(act(blocked, verdict.reason or ""))
    if verdict.context:
        acts.append(act("addedContext", "\n".join(verdict.context)[:500]))
    if verdict.halt is not None:
        acts.append(act("stopped", verdict.halt))
    return acts
