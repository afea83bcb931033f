"""Events of a turn: a closed union of frozen dataclasses, mapped to `tiller/event` fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .outcomes import Completed, Failed, TurnOutcome, outcome_name
from .protocol import JSON, ToolStatus, TrailItem


@dataclass(frozen=True)
class TurnStarted:
    prompt: str


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


@dataclass(frozen=True)
class ToolFinished:
    tool_use_id: str
    name: str
    status: ToolStatus
    output: str
    duration_ms: int


@dataclass(frozen=True)
class Notice:
    text: str


@dataclass(frozen=True)
class PlanDecided:
    approved: bool
    feedback: str | None


@dataclass(frozen=True)
class TurnEnded:
    outcome: TurnOutcome
    trail: tuple[TrailItem, ...]


Event = (
    TurnStarted
    | TextDelta
    | ThinkingDelta
    | ToolStarted
    | ToolFinished
    | Notice
    | PlanDecided
    | TurnEnded
)

EVENT_OUTPUT_CAP = 4096


def cap_event_output(text: str) -> str:
    """At most 4 KB of tool output in an event, marked when cut."""
    data = text.encode("utf-8")
    if len(data) <= EVENT_OUTPUT_CAP:
        return text
    marker = f"\n… [truncated, {len(data)} bytes in all]"
    kept = data[: EVENT_OUTPUT_CAP - len(marker.encode("utf-8"))]
    return kept.decode("utf-8", errors="ignore") + marker


def event_fields(event: Event) -> JSON:
    """The type-specific fields of a `tiller/event` notification."""
    match event:
        case TurnStarted(prompt=prompt):
            return {"type": "turnStarted", "prompt": prompt}
        case TextDelta(text=text):
            return {"type": "textDelta", "text": text}
        case ThinkingDelta(text=text):
            return {"type": "thinkingDelta", "text": text}
        case ToolStarted():
            return {
                "type": "toolStarted",
                "toolUseId": event.tool_use_id,
                "name": event.name,
                "input": event.input,
                "batch": event.batch,
                "concurrent": event.concurrent,
            }
        case ToolFinished():
            return {
                "type": "toolFinished",
                "toolUseId": event.tool_use_id,
                "name": event.name,
                "status": event.status,
                "output": cap_event_output(event.output),
                "durationMs": event.duration_ms,
            }
        case Notice(text=text):
            return {"type": "notice", "text": text}
        case PlanDecided(approved=approved, feedback=feedback):
            fields: JSON = {"type": "planDecided", "approved": approved}
            if feedback:
                fields["feedback"] = feedback
            return fields
        case TurnEnded(outcome=outcome, trail=trail):
            ended: JSON = {
                "type": "turnEnded",
                "outcome": outcome_name(outcome),
                "trail": [item.to_wire() for item in trail],
            }
            match outcome:
                case Completed(final=final) if final:
                    ended["final"] = final
                case Failed(kind=kind, message=message, retryable=retryable):
                    ended["error"] = {"kind": kind, "message": message, "retryable": retryable}
                case _:
                    pass
            return ended
