"""What a hook's exit code and output mean, in Claude Code's documented shape.

- exit 0: success. stdout may be a JSON object (``continue``, ``stopReason``,
  ``suppressOutput``, ``systemMessage``, ``decision``/``reason``, ``hookSpecificOutput`` with
  ``permissionDecision`` allow|deny|ask, ``permissionDecisionReason``, ``updatedInput``,
  ``additionalContext``); for UserPromptSubmit and SessionStart plain stdout is context.
- exit 2: blocking. stderr is the reason: fed back to the model (PreToolUse: the call is
  denied; PostToolUse: added to the result; Stop: the turn goes on) or shown to the user
  (UserPromptSubmit: the prompt is blocked; the other events).
- any other exit, a timeout, a hook that cannot start: a non-blocking error the user is told.

Several hooks of one event combine: deny wins over ask over allow, the last
``updatedInput`` wins, contexts and messages add up, any ``continue: false`` stops.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tiller.core.hooks.config import HookCommand, HookEvent
from tiller.core.hooks.run import HookRun
from tiller.jsontypes import JSON

Permission = Literal["allow", "deny", "ask"]
_RANK: dict[Permission, int] = {"allow": 1, "ask": 2, "deny": 3}
CONTEXT_CAP = 10_000  # characters of context one hook may add (Claude Code caps it too)


@dataclass(frozen=True)
class Verdict:
    """What the hooks of one event said, combined."""

    permission: Permission | None = None  # PreToolUse
    permission_by: str | None = None  # the command that decided it
    reason: str | None = None  # why: a denial's or a block's reason
    blocked: bool = False  # exit 2 or decision "block": the event's blocking meaning
    updated_input: JSON | None = None  # PreToolUse, in Claude Code's fields
    context: tuple[str, ...] = ()  # for the model (additionalContext, plain stdout)
    messages: tuple[str, ...] = ()  # for the user (systemMessage, stderr, errors)
    halt: str | None = None  # ``continue: false``: the turn stops, with this reason
    acted: tuple[str, ...] = ()  # the commands that did something (for the log)


NOTHING = Verdict()


def _short(command: str) -> str:
    line = command.strip().splitlines()[0] if command.strip() else command
    return line if len(line) <= 60 else line[:57] + "..."


def hook_label(hook: HookCommand) -> str:
    return f"hook: {_short(hook.command)}"


def _json_object(stdout: str) -> JSON | None:
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def read_reply(event: HookEvent, hook: HookCommand, run: HookRun) -> Verdict:
    """One hook's run as a verdict."""
    label = hook_label(hook)
    if run.failed_to_start is not None:
        return Verdict(messages=(f"{label} could not start: {run.failed_to_start}",))
    if run.timed_out:
        return Verdict(
            messages=(f"{label} timed out after {hook.timeout:g} s and was stopped",),
            acted=(label,),
        )
    if run.exit_code == 2:
        reason = run.stderr.strip() or f"{label} blocked it (exit 2)"
        return _blocked(event, label, reason)
    if run.exit_code != 0:
        why = run.stderr.strip() or run.stdout.strip()
        detail = f": {why[:500]}" if why else ""
        return Verdict(messages=(f"{label} failed (exit {run.exit_code}){detail}",))
    reply = _json_object(run.stdout)
    if reply is None:
        text = run.stdout.strip()
        if text and event in ("UserPromptSubmit", "SessionStart"):
            return Verdict(context=(text[:CONTEXT_CAP],), acted=(label,))
        return NOTHING
    return _from_json(event, label, reply)


def _blocked(event: HookEvent, label: str, reason: str) -> Verdict:
    match event:
        case "PreToolUse":
            return Verdict("deny", label, reason, True, acted=(label,))
        case "PostToolUse" | "Stop":
            return Verdict(reason=reason, blocked=True, acted=(label,))
        case "UserPromptSubmit":
            return Verdict(reason=reason, blocked=True, acted=(label,))
        case _:
            return Verdict(messages=(f"{label}: {reason}",), acted=(label,))


def _text(reply: JSON, key: str) -> str | None:
    value = reply.get(key)
    return value if isinstance(value, str) and value.strip() else None


def _from_json(event: HookEvent, label: str, reply: JSON) -> Verdict:
    specific = reply.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    messages = tuple(m for m in [_text(reply, "systemMessage")] if m)
    halt = None
    if reply.get("continue") is False:
        halt = _text(reply, "stopReason") or f"{label} stopped the turn"
    context = _text(specific, "additionalContext")
    contexts = (context[:CONTEXT_CAP],) if context else ()
    decision, reason = reply.get("decision"), _text(reply, "reason")
    permission: Permission | None = None
    updated: JSON | None = None
    blocked = False
    if event == "PreToolUse":
        said = specific.get("permissionDecision")
        legacy = {"approve": "allow", "block": "deny"}.get(str(decision))
        for option in ("allow", "deny", "ask"):
            if said == option or (said is None and legacy == option):
                permission = option
        reason = _text(specific, "permissionDecisionReason") or reason
        raw = specific.get("updatedInput")
        updated = raw if isinstance(raw, dict) else None
    elif decision == "block" and event in ("PostToolUse", "UserPromptSubmit", "Stop"):
        blocked = True
    acted = permission is not None or updated is not None or contexts or blocked or halt
    return Verdict(
        permission=permission,
        permission_by=label if permission is not None else None,
        reason=reason,
        blocked=blocked,
        updated_input=updated,
        context=contexts,
        messages=messages,
        halt=halt,
        acted=(label,) if acted else (),
    )


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    """The verdicts of one event's hooks as one (deny > ask > allow; contexts add up)."""
    out = NOTHING
    for v in verdicts:
        stronger = v.permission is not None and (
            out.permission is None or _RANK[v.permission] > _RANK[out.permission]
        )
        out = Verdict(
            permission=v.permission if stronger else out.permission,
            permission_by=v.permission_by if stronger else out.permission_by,
            reason=_join(out.reason, v.reason) if v.blocked or stronger else out.reason,
            blocked=out.blocked or v.blocked,
            updated_input=v.updated_input if v.updated_input is not None else out.updated_input,
            context=out.context + v.context,
            messages=out.messages + v.messages,
            halt=out.halt or v.halt,
            acted=out.acted + v.acted,
        )
    return out


def _join(first: str | None, second: str | None) -> str | None:
    if first and second and first != second:
        return f"{first}\n{second}"
    return second or first
