from __future__ import annotations

import pytest

from tiller.core.permissions.call_rules import NOT_RULED, exact_rule, judge_command
from tiller.core.permissions.modes import Allow, Ask, Deny, Grants, decide
from tiller.core.permissions.rules import RuleBook
from tiller.protocol import Mode
from tiller.tools.base import ToolKind

TABLE: list[tuple[ToolKind, bool, Mode, type]] = [
    ("read", True, "default", Allow),
    ("read", True, "plan", Allow),
    ("bash", True, "plan", Allow),
    ("edit", False, "default", Ask),
    ("edit", False, "acceptEdits", Allow),
    ("edit", False, "plan", Deny),
    ("bash", False, "default", Ask),
    ("bash", False, "acceptEdits", Ask),
    ("bash", False, "plan", Deny),
    ("state", False, "plan", Allow),
    ("plan_exit", False, "plan", Allow),
]


@pytest.mark.parametrize(("kind", "read_only", "mode", "expected"), TABLE)
def test_design_permission_table(
    kind: ToolKind, read_only: bool, mode: Mode, expected: type
) -> None:
    decision = decide(mode, kind, read_only=read_only, ruled=NOT_RULED, grants=Grants())
    assert isinstance(decision, expected)


def test_allow_session_remembers_edits_and_exact_segments_but_not_in_plan_mode() -> None:
    grants = Grants().allow_edits().allow_rules((exact_rule("make test"),))
    assert decide("default", "edit", read_only=False, ruled=NOT_RULED, grants=grants) == Allow(
        "session grant"
    )
    book = RuleBook(grants.rules)
    granted = judge_command("make test", book, lambda _: False)
    assert decide("default", "bash", read_only=False, ruled=granted, grants=grants) == Allow(
        "rule: Bash(make test) (session)"
    )
    other = judge_command("make all", book, lambda _: False)
    assert decide("default", "bash", read_only=False, ruled=other, grants=grants) == Ask(
        "mode default"
    )
    assert isinstance(decide("plan", "edit", read_only=False, ruled=NOT_RULED, grants=grants), Deny)
    assert isinstance(decide("plan", "bash", read_only=False, ruled=granted, grants=grants), Deny)


def test_plan_denial_tells_the_model_what_to_do() -> None:
    decision = decide("plan", "edit", read_only=False, ruled=NOT_RULED, grants=Grants())
    assert isinstance(decision, Deny) and "exit_plan_mode" in decision.reason


def test_every_decision_names_what_made_it() -> None:
    grants = Grants()
    assert decide("plan", "bash", read_only=True, ruled=NOT_RULED, grants=grants).by == "read-only"
    assert decide("plan", "bash", read_only=False, ruled=NOT_RULED, grants=grants).by == "mode plan"
    accepted = decide("acceptEdits", "edit", read_only=False, ruled=NOT_RULED, grants=grants)
    assert accepted == Allow("mode acceptEdits")
