"""The plan gate: one revision counter and one cap for the plans (exit_plan_mode) of a turn."""

from __future__ import annotations

import pytest

from tiller.core.turn.approvals import PLAN_NOT_APPROVED, PlanAnswer
from tiller.core.turn.plan_gate import (
    MAX_PLAN_REVISIONS,
    Approved,
    Declined,
    GaveUp,
    PlanGate,
    Revise,
)

NO = PlanAnswer(False, "smaller steps")


def test_an_approval_gives_the_chosen_mode() -> None:
    gate, verdict = PlanGate().decide(PlanAnswer(True, mode="default"))
    assert verdict == Approved("default")
    assert gate == PlanGate()


def test_a_rejection_with_feedback_asks_for_a_revision_and_counts_it() -> None:
    gate, verdict = PlanGate().decide(NO)
    assert verdict == Revise("smaller steps", 1)
    assert gate == PlanGate(revisions=1)


@pytest.mark.parametrize("answer", [PLAN_NOT_APPROVED, PlanAnswer(False, "  ")])
def test_a_rejection_without_feedback_or_without_an_answer_ends_the_turn(
    answer: PlanAnswer,
) -> None:
    gate, verdict = PlanGate(revisions=2).decide(answer)
    assert verdict == Declined()
    assert gate == PlanGate(revisions=2)  # not a revision


def test_the_rejection_after_the_last_revision_gives_up() -> None:
    gate = PlanGate()
    verdicts = []
    for _ in range(MAX_PLAN_REVISIONS + 1):
        gate, verdict = gate.decide(NO)
        verdicts.append(verdict)
    assert verdicts[:-1] == [Revise("smaller steps", n) for n in range(1, MAX_PLAN_REVISIONS + 1)]
    assert verdicts[-1] == GaveUp("smaller steps", MAX_PLAN_REVISIONS + 1)
    assert gate.revisions == MAX_PLAN_REVISIONS


def test_an_approval_after_revisions_keeps_the_count_for_the_rest_of_the_turn() -> None:
    gate, _ = PlanGate().decide(NO)
    gate, verdict = gate.decide(PlanAnswer(True))
    assert verdict == Approved("acceptEdits")
    assert gate == PlanGate(revisions=1)
