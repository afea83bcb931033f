from __future__ import annotations

import pytest

from tiller.core.permissions import Allow, Ask, Deny, Grants, decide
from tiller.protocol import Mode
from tiller.workspace.tools.base import ToolKind

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
    decision = decide(mode, kind, read_only=read_only, command="make", grants=Grants())
    assert isinstance(decision, expected)


def test_allow_session_remembers_edits_and_exact_commands_but_not_in_plan_mode() -> None:
    grants = Grants().allow_edits().allow_command("make test")
    assert decide("default", "edit", read_only=False, command=None, grants=grants) == Allow(
        "session grant"
    )
    assert decide("default", "bash", read_only=False, command="make test", grants=grants) == Allow(
        "session grant"
    )
    assert decide("default", "bash", read_only=False, command="make all", grants=grants) == Ask(
        "mode default"
    )
    assert isinstance(decide("plan", "edit", read_only=False, command=None, grants=grants), Deny)


def test_plan_denial_tells_the_model_what_to_do() -> None:
    decision = decide("plan", "edit", read_only=False, command=None, grants=Grants())
    assert isinstance(decision, Deny) and "exit_plan_mode" in decision.reason


def test_every_decision_names_what_made_it() -> None:
    grants = Grants()
    assert decide("plan", "bash", read_only=True, command="ls", grants=grants).by == "read-only"
    assert decide("plan", "bash", read_only=False, command="rm", grants=grants).by == "mode plan"
    accepted = decide("acceptEdits", "edit", read_only=False, command=None, grants=grants)
    assert accepted == Allow("mode acceptEdits")
