"""The plan gate: one revision counter and one cap for every plan of a turn; which final texts
are offered as plans."""

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
    asks_the_user,
)

NO = PlanAnswer(False, "smaller steps")


def test_an_approval_gives_the_chosen_mode() -> None:
    gate, verdict = PlanGate().decide(PlanAnswer(True, mode="default"))
    assert verdict == Approved("default")
    assert gate == PlanGate()


def test_a_rejection_with_feedback_asks_for_a_revision_and_counts_it() -> None:
    gate, verdict = PlanGate().decide(NO)
    assert verdict == Revise("smaller steps", 1)
    assert gate == PlanGate(revisions=1, rejected=True)


@pytest.mark.parametrize("answer", [PLAN_NOT_APPROVED, PlanAnswer(False, "  ")])
def test_a_rejection_without_feedback_or_without_an_answer_ends_the_turn(
    answer: PlanAnswer,
) -> None:
    gate, verdict = PlanGate(revisions=2).decide(answer)
    assert verdict == Declined()
    assert gate == PlanGate(revisions=2, rejected=True)  # not a revision


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
    assert gate == PlanGate(revisions=1, rejected=False)


def test_a_final_text_is_offered_as_a_plan_until_a_plan_is_rejected() -> None:
    gate = PlanGate()
    assert gate.offers("1. Add a cache\n2. Test it")
    rejected, _ = gate.decide(NO)
    assert not rejected.offers("Understood, still planning.")
    approved, _ = rejected.decide(PlanAnswer(True))
    assert approved.offers("1. Add a cache\n2. Test it")


def test_an_empty_final_text_is_never_a_plan() -> None:
    assert not PlanGate().offers("  \n")


@pytest.mark.parametrize(
    "text",
    [
        "Should the cache live in memory or on disk?",
        "Which loader should I change?**",
        "I looked at both.\n\nDo you want `a.py` or `b.py`? Either works.",
        "Two options exist. Please confirm which one you want.",
        "Let me know which of the two you prefer.",
        "What would you prefer here: speed or memory.",
    ],
)
def test_a_text_that_asks_the_user_something_is_a_question(text: str) -> None:
    assert asks_the_user(text)
    assert not PlanGate().offers(text)


@pytest.mark.parametrize(
    "text",
    [
        "## Plan\n\n1. Add a cache\n2. Test it",
        "Open question: disk or memory?\n\n## Plan\n\n1. Use memory\n2. Measure it",
        "1. Match `colou?r` in the regex\n2. Test it",
        "1. Add a cache\n2. Test it\n\nLet me know if you want changes.",
        "1. Fetch https://example.com/api?key=1\n2. Parse it",
    ],
)
def test_a_plan_is_not_a_question(text: str) -> None:
    assert not asks_the_user(text)
    assert PlanGate().offers(text)
