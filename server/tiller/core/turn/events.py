"""Events of a turn: a closed union of frozen dataclasses, mapped to `tiller/event` fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from tiller.core.permissions.modes import Decision, decision_to_wire
from tiller.core.turn.outcomes import (
    Completed,
    Failed,
    Interrupted,
    Refused,
    TurnOutcome,
    outcome_name,
)
from tiller.jsontypes import JSON
from tiller.model.usage import Usage
from tiller.protocol import HookOutcome, ToolStatus, TrailItem
from tiller.tools.base import DiffStat
from tiller.workspace.checkpoints.shadow_repo import Changes


@dataclass(frozen=True)
class TurnStarted:
    prompt: str
    attachments: tuple[JSON, ...] = ()  # AttachmentSummary each: chips and small thumbnails


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True)
class ToolStarted:
    tool_use_id: str
    name: str
    input: dict[str, Any]
    batch: int
    concurrent: bool
    permission: Decision | None = None  # None: the call never got that far (unknown, invalid)


@dataclass(frozen=True)
class ToolFinished:
    tool_use_id: str
    name: str
    status: ToolStatus
    output: str
    duration_ms: int
    diff: DiffStat | None = None  # write_file / edit_file: lines added and removed
    line: int | None = None  # write_file / edit_file: the first line they changed


@dataclass(frozen=True)
class ToolOutput:
    """Live output of a running command (coalesced, capped)."""

    tool_use_id: str
    text: str


@dataclass(frozen=True)
class Steered:
    """Text the user sent while the turn ran (``tiller/steer``), now delivered to the model
    at a step boundary: it is in the next request."""

    text: str


@dataclass(frozen=True)
class Notice:
    text: str


@dataclass(frozen=True)
class HookActed:
    """A hook did something the user should see (which hooks, what, for which call)."""

    event: str
    hooks: str  # "hook: ./check.py", comma-separated when several acted
    outcome: HookOutcome
    message: str
    tool_use_id: str | None = None


@dataclass(frozen=True)
class PlanDecided:
    approved: bool
    feedback: str | None


@dataclass(frozen=True)
class QueueDropped:
    """Queued prompts that will not run (their session was switched away or shut down)."""

    prompts: tuple[str, ...]


@dataclass(frozen=True)
class StepRestarted:
    """The current step's partial output is void: it is streamed again (``reason``: the
    error kind, or ``output_limit`` when retried with more room)."""

    reason: str


@dataclass(frozen=True)
class ConfirmRequested:
    """A tool call waits for the user's approval; ``preview`` is what the question showed,
    summarized (its kind and path or command, no before/after text)."""

    tool_use_id: str
    name: str
    preview: JSON


@dataclass(frozen=True)
class ConfirmDecided:
    tool_use_id: str
    decision: Literal["allow", "allowSession", "allowAlways", "deny"]
    feedback: str | None = None


@dataclass(frozen=True)
class PlanRequested:
    plan: str


@dataclass(frozen=True)
class CheckpointRequested:
    tools_used: int


@dataclass(frozen=True)
class CheckpointDecided:
    go_on: bool


@dataclass(frozen=True)
class CommandAnswered:
    """A slash command and the server's answer, in the session it was typed in."""

    text: str
    message: str


@dataclass(frozen=True)
class Rewound:
    """Files and/or the conversation were brought back to before turn ``to_turn_id``;
    ``changes`` goes on the wire by effect (``reverted``, ``deleted``, ``restored``) and in the
    old view (``changed``, ``added``, ``removed``: seen from now)."""

    to_turn_id: str
    files: bool
    conversation: bool
    undo_id: str
    changes: Changes


@dataclass(frozen=True)
class RewindUndone:
    """The rewind ``undo_id`` was undone; ``changes`` as in ``Rewound`` (what the undo did)."""

    undo_id: str
    changes: Changes


@dataclass(frozen=True)
class Sliced:
    """The first entry of a session sliced from ``source``."""

    source: str
    spec: str


@dataclass(frozen=True)
class AgentStarted:
    """The ``task`` call ``tool_use_id`` started the child session ``session_id`` (agent kind
    ``agent``); the child's own events follow with its session id and this turn as their
    ``parentTurnId``. Kept in the parent's transcript: the link to the child's."""

    tool_use_id: str
    session_id: str
    agent: str
    description: str


@dataclass(frozen=True)
class TurnEnded:
    outcome: TurnOutcome
    trail: tuple[TrailItem, ...]
    usage: Usage | None = None


Event = (
    TurnStarted
    | Steered
    | TextDelta
    | ThinkingDelta
    | ToolStarted
    | ToolFinished
    | ToolOutput
    | Notice
    | HookActed
    | PlanDecided
    | QueueDropped
    | StepRestarted
    | ConfirmRequested
    | ConfirmDecided
    | PlanRequested
    | CheckpointRequested
    | CheckpointDecided
    | CommandAnswered
    | Rewound
    | RewindUndone
    | Sliced
    | AgentStarted
    | TurnEnded
)


@dataclass(frozen=True)
class Posted:
    """An event as a session posts it: whose it is, in which turn, its place in the session's
    sequence, and (for a child session) the parent's turn that started it."""

    session_id: str
    turn_id: str | None
    seq: int
    event: Event
    parent_turn_id: str | None = None

    def fields(self) -> JSON:
        """The event's own fields (``type`` included), without the envelope."""
        return event_fields(self.event)

    def to_wire(self) -> JSON:
        """The ``tiller/event`` notification's params."""
        wire: JSON = {"sessionId": self.session_id, "turnId": self.turn_id, "seq": self.seq}
        if self.parent_turn_id is not None:
            wire["parentTurnId"] = self.parent_turn_id
        return {**wire, **self.fields()}


EVENT_OUTPUT_CAP = 4096
PROMPT_EVENT_CAP = 64 * 1024


def cap_event_output(text: str, limit: int = EVENT_OUTPUT_CAP) -> str:
    """At most ``limit`` bytes (default 4 KB: tool output) of text in an event, marked when
    cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    marker = f"\n… [truncated, {len(data)} bytes in all]"
    kept = data[: limit - len(marker.encode("utf-8"))]
    return kept.decode("utf-8", errors="ignore") + marker


def event_fields(event: Event) -> JSON:
    """The type-specific fields of a `tiller/event` notification."""
    match event:
        case TurnStarted(prompt=prompt, attachments=attached):  # a huge prompt is shown cut
            started: JSON = {
                "type": "turnStarted",
                "prompt": cap_event_output(prompt, PROMPT_EVENT_CAP),
            }
            if attached:
                started["attachments"] = list(attached)
            return started
        case TextDelta(text=text):
            return {"type": "textDelta", "text": text}
        case ThinkingDelta(text=text):
            return {"type": "thinkingDelta", "text": text}
        case ToolStarted():
            return _tool_started_fields(event)
        case ToolFinished():
            return _tool_finished_fields(event)
        case ToolOutput(tool_use_id=tool_use_id, text=text):
            return {"type": "toolOutput", "toolUseId": tool_use_id, "text": text}
        case Notice(text=text):
            return {"type": "notice", "text": text}
        case HookActed():
            acted: JSON = {
                "type": "hookActed",
                "event": event.event,
                "hooks": event.hooks,
                "outcome": event.outcome,
                "message": cap_event_output(event.message),
            }
            return acted | ({"toolUseId": event.tool_use_id} if event.tool_use_id else {})
        case Steered(text=text):
            return {"type": "steered", "text": cap_event_output(text, PROMPT_EVENT_CAP)}
        case QueueDropped(prompts=prompts):
            return {"type": "queueDropped", "prompts": list(prompts)}
        case PlanDecided(approved=approved, feedback=feedback):
            fields: JSON = {"type": "planDecided", "approved": approved}
            if feedback:
                fields["feedback"] = feedback
            return fields
        case StepRestarted(reason=reason):
            return {"type": "stepRestarted", "reason": reason}
        case TurnEnded():
            return _turn_ended_fields(event)
        case _:
            return _asked_or_done_fields(event)


def _tool_started_fields(event: ToolStarted) -> JSON:
    return {
        "type": "toolStarted",
        "toolUseId": event.tool_use_id,
        "name": event.name,
        "input": event.input,
        "batch": event.batch,
        "concurrent": event.concurrent,
        **(
            {"permission": decision_to_wire(event.permission)}
            if event.permission is not None
            else {}
        ),
    }


def _tool_finished_fields(event: ToolFinished) -> JSON:
    return {
        "type": "toolFinished",
        "toolUseId": event.tool_use_id,
        "name": event.name,
        "status": event.status,
        "output": cap_event_output(event.output),
        "durationMs": event.duration_ms,
        **({"diff": event.diff.to_wire()} if event.diff is not None else {}),
        **({"line": event.line} if event.line is not None else {}),
    }


def _turn_ended_fields(event: TurnEnded) -> JSON:
    """How the turn ended, its trail and usage, and what its outcome carries."""
    outcome = event.outcome
    ended: JSON = {
        "type": "turnEnded",
        "outcome": outcome_name(outcome),
        "trail": [item.to_wire() for item in event.trail],
    }
    if event.usage is not None:
        ended["usage"] = event.usage.to_wire()
    match outcome:
        case Completed(final=final) if final:
            ended["final"] = final
        case Failed(kind=kind, message=message, retryable=retryable):
            ended["error"] = {"kind": kind, "message": message, "retryable": retryable}
        case Interrupted(cause=cause):
            ended["cause"] = cause
        case Refused():
            ended["refusal"] = outcome.to_wire()
        case _:
            pass
    return ended


def _asked_or_done_fields(event: Event) -> JSON:
    """The fields of what was asked and answered around a turn (questions, slash commands,
    rewinds, slices)."""
    match event:
        case ConfirmRequested(tool_use_id=tool_use_id, name=name, preview=preview):
            return {
                "type": "confirmRequested",
                "toolUseId": tool_use_id,
                "name": name,
                "preview": preview,
            }
        case ConfirmDecided(tool_use_id=tool_use_id, decision=decision, feedback=feedback):
            decided: JSON = {"type": "confirmDecided", "toolUseId": tool_use_id}
            decided["decision"] = decision
            return {**decided, **({"feedback": feedback} if feedback else {})}
        case PlanRequested(plan=plan):
            return {"type": "planRequested", "plan": plan}
        case CheckpointRequested(tools_used=tools_used):
            return {"type": "checkpointRequested", "toolsUsed": tools_used}
        case CheckpointDecided(go_on=go_on):
            return {"type": "checkpointDecided", "continue": go_on}
        case CommandAnswered(text=text, message=message):
            return {"type": "command", "text": text, "message": message}
        case Rewound():
            return {
                "type": "rewound",
                "turnId": event.to_turn_id,  # the turn rewound to (the envelope's turnId too)
                "files": event.files,
                "conversation": event.conversation,
                "undoId": event.undo_id,
                **event.changes.to_wire(),
            }
        case RewindUndone(undo_id=undo_id, changes=changes):
            return {"type": "rewindUndone", "undoId": undo_id, **changes.to_wire()}
        case Sliced(source=source, spec=spec):
            return {"type": "sliced", "from": source, "spec": spec}
        case AgentStarted():
            return {
                "type": "agentStarted",
                "toolUseId": event.tool_use_id,
                "agentSessionId": event.session_id,
                "agent": event.agent,
                "description": event.description,
            }
        case _:
            raise AssertionError(f"not an event: {event!r}")
