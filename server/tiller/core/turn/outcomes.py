"""Every way a turn ends is a value, matched at one place (``end_turn`` in
``core/session/turns.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tiller.protocol import ErrorKind, OutcomeName


@dataclass(frozen=True)
class Completed:
    final: str | None


InterruptCause = Literal["user", "keyword", "server_stopped"]


@dataclass(frozen=True)
class Interrupted:
    """``cause``: the user's interrupt request, a ``stop``/``cancel`` prompt, or a server that
    died mid-turn (written when the session is resumed). The loop returns the default; the
    session, which knows why it cancelled, fills in the cause."""

    cause: InterruptCause = "user"


@dataclass(frozen=True)
class Stopped:
    reason: str


@dataclass(frozen=True)
class Failed:
    kind: ErrorKind
    message: str
    retryable: bool


@dataclass(frozen=True)
class Refused:
    """The model declined (``stop_reason: refusal``); fields from the API's ``stop_details``."""

    category: str | None = None
    explanation: str | None = None

    def to_wire(self) -> dict[str, str]:
        fields = {"category": self.category, "explanation": self.explanation}
        return {k: v for k, v in fields.items() if v}


TurnOutcome = Completed | Interrupted | Stopped | Failed | Refused


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
        case Refused():
            return "refused"
