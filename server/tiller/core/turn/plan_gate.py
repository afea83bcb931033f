"""The plan gate: what a user's answer to a plan means for the turn.

One gate per turn serves both ways a plan reaches the user: an ``exit_plan_mode`` call, and a
final text in plan mode that reads as a plan. Both count their rejections with feedback on the
same counter, against the same cap. The loop asks the approver; ``PlanGate.decide`` turns the
answer into a ``PlanVerdict`` and the gate's next state.

A final text is offered as a plan only when it reads as one (``PlanGate.offers``): not once a
plan was rejected in this turn (the model's reply to a rejection is not a new plan unless it
calls ``exit_plan_mode`` again), and not when it ends by asking the user something.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tiller.core.turn.approvals import PlanAnswer
from tiller.protocol import Mode

MAX_PLAN_REVISIONS = 5  # plans rejected with feedback and revised, per turn (both ways in)

PLAN_APPROVED = "Plan approved. Implement it now."
PLAN_REVISE = (
    "Plan not approved: {feedback}. Revise it. Present the revised plan with exit_plan_mode."
)
EXIT_APPROVED = "The user approved the plan (mode is now {mode}). Implement it now."
EXIT_REVISE = (
    "The user did not approve the plan: {feedback}. Revise the plan and present it again with "
    "exit_plan_mode; mode stays plan."
)
EXIT_DECLINED = (
    "The user did not approve the plan and gave no feedback; mode stays plan. The turn ends "
    "here: wait for the user."
)
EXIT_GAVE_UP = (
    "The user did not approve the plan: {feedback}. It was rejected {times} times in this turn: "
    "the turn ends here; mode stays plan."
)
GAVE_UP_NOTICE = "Plan rejected {times} times: turn ended"


@dataclass(frozen=True)
class Approved:
    """The plan is approved: the mode becomes ``mode`` and the model implements it."""

    mode: Mode


@dataclass(frozen=True)
class Revise:
    """Rejected with feedback: the model revises the plan (revision ``revision`` of the cap)."""

    feedback: str
    revision: int


@dataclass(frozen=True)
class Declined:
    """Rejected without feedback, or nobody could answer: the turn ends, mode stays plan."""


@dataclass(frozen=True)
class GaveUp:
    """Rejected with feedback once more than the cap allows: the turn ends, mode stays plan."""

    feedback: str
    times: int  # rejections with feedback in this turn, this one included


PlanVerdict = Approved | Revise | Declined | GaveUp


@dataclass(frozen=True)
class PlanGate:
    """The plan answers of one turn so far (a fresh gate per turn: nothing to reset)."""

    revisions: int = 0  # rejections with feedback that sent the model back to revise
    rejected: bool = False  # the last plan of this turn was rejected

    def decide(self, answer: PlanAnswer) -> tuple[PlanGate, PlanVerdict]:
        """The gate after ``answer``, and what the answer means for the turn."""
        if answer.approved:
            return replace(self, rejected=False), Approved(answer.mode)
        rejected = replace(self, rejected=True)
        feedback = (answer.feedback or "").strip()
        if not feedback:
            return rejected, Declined()
        if self.revisions >= MAX_PLAN_REVISIONS:
            return rejected, GaveUp(feedback, self.revisions + 1)
        revised = replace(rejected, revisions=self.revisions + 1)
        return revised, Revise(feedback, revised.revisions)

    def offers(self, final: str) -> bool:
        """Whether a final text in plan mode is put to the user as a plan."""
        return bool(final.strip()) and not self.rejected and not asks_the_user(final)


# A question mark that ends a sentence (before a space, the end, or closing markdown/quotes).
_QUESTION = re.compile(r"\?(?=[\s*_`\"')\]}»”’]|$)")
_ASKS = re.compile(
    r"\b(let me know (which|what|whether|how|where|when)"  # not "let me know if ...": a courtesy
    r"|please (confirm|clarify|specify|tell me|choose|decide)"
    r"|(which|what) (would|do) you (prefer|want|like))\b",
    re.IGNORECASE,
)


def asks_the_user(text: str) -> bool:
    """The text ends by asking the user something: its last paragraph has a question, or
    asks for input in so many words ("please confirm", "let me know which", ...)."""
    paragraphs = [p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    if not paragraphs:
        return False
    last = paragraphs[-1]
    return _QUESTION.search(last) is not None or _ASKS.search(last) is not None
