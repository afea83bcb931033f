"""The plan gate: what a user's answer to a plan means for the turn.

A plan is what the model presents with ``exit_plan_mode``; a final text is an answer, in plan
mode too (a read-only review ends as one). The loop asks the approver; ``PlanGate.decide``
turns the answer into a ``PlanVerdict`` and the gate's next state, counting the rejections
with feedback of the turn against one cap.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tiller.core.turn.approvals import PlanAnswer
from tiller.protocol import Mode

MAX_PLAN_REVISIONS = 5  # plans rejected with feedback and revised, per turn

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

    def decide(self, answer: PlanAnswer) -> tuple[PlanGate, PlanVerdict]:
        """The gate after ``answer``, and what the answer means for the turn."""
        if answer.approved:
            return self, Approved(answer.mode)
        feedback = (answer.feedback or "").strip()
        if not feedback:
            return self, Declined()
        if self.revisions >= MAX_PLAN_REVISIONS:
            return self, GaveUp(feedback, self.revisions + 1)
        revised = replace(self, revisions=self.revisions + 1)
        return revised, Revise(feedback, revised.revisions)
