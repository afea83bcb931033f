"""Every way a turn ends is a value, matched at one place (session.finish_turn)."""

from __future__ import annotations

from dataclasses import dataclass

from .protocol import ErrorKind, OutcomeName


@dataclass(frozen=True)
class Completed:
    final: str | None


@dataclass(frozen=True)
class Interrupted:
    pass


@dataclass(frozen=True)
class Stopped:
    reason: str


@dataclass(frozen=True)
class Failed:
    kind: ErrorKind
    message: str
    retryable: bool


TurnOutcome = Completed | Interrupted | Stopped | Failed


def outcome_name(outcome: TurnOutcome) -> OutcomeName:
    match outcome:
        case Completed():
            return "completed"
        case Interrupted():
            return "interrupted"
        case Stopped():
            return "stopped"
        case Failed():
            return "failed"
