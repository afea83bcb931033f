"""The terminal questions (both clients): only a choice answers; feedback rides on the answer."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from tiller.faces.client.questions import checkpoint_question, confirm_question, plan_question

EDIT = {
    "name": "edit_file",
    "input": {"path": "notes.md"},
    "preview": {"kind": "diff", "path": "notes.md", "before": "a\n", "after": "b\n"},
}
COMMAND = {"name": "bash", "input": {"command": "make test"}, "preview": {"kind": "command"}}


def test_confirm_choices_answer_allow_allow_for_session_and_deny() -> None:
    question = confirm_question(EDIT)
    assert question.title == "Allow edit_file notes.md?"
    assert question.choice("y").answered() == {"decision": "allow"}  # type: ignore[union-attr]
    assert question.choice("a").answered() == {"decision": "allowSession"}  # type: ignore[union-attr]
    deny = question.choice("n")
    assert deny is not None and deny.asks_feedback
    assert deny.answered("  use README.md  ") == {"decision": "deny", "feedback": "use README.md"}
    assert deny.answered("   ") == {"decision": "deny"}
    assert "all edits" in question.prompt_line()
    assert "this command" in confirm_question(COMMAND).prompt_line()


def test_only_a_command_offers_always_allow_kept_as_a_rule() -> None:
    rule = confirm_question(COMMAND).choice("r")
    assert rule is not None and rule.answered() == {"decision": "allowAlways"}
    assert confirm_question(EDIT).choice("r") is None


def test_plan_choices_approve_with_a_mode_or_reject_with_feedback() -> None:
    question = plan_question({"plan": "1. do it"})
    assert question.choice("a").answered() == {"approved": True, "mode": "acceptEdits"}  # type: ignore[union-attr]
    assert question.choice("m").answered() == {"approved": True, "mode": "default"}  # type: ignore[union-attr]
    reject = question.choice("r")
    assert reject is not None and reject.asks_feedback
    assert reject.answered("smaller steps") == {"approved": False, "feedback": "smaller steps"}


def test_checkpoint_choices_continue_or_stop_and_show_the_trail() -> None:
    question = checkpoint_question({"toolsUsed": 20, "trail": [{"name": "bash", "status": "ok"}]})
    assert "20 tool calls so far (bash ✓)" in question.title
    assert question.choice("c").answered() == {"continue": True}  # type: ignore[union-attr]
    assert question.choice("s").answered() == {"continue": False}  # type: ignore[union-attr]


@given(st.text(alphabet=string.printable + "\r\x1b", min_size=1, max_size=1))
def test_a_key_that_is_not_a_choice_answers_nothing(key: str) -> None:
    for question in (confirm_question(EDIT), plan_question({}), checkpoint_question({})):
        keys = {choice.key for choice in question.choices}
        assert (question.choice(key) is None) is (key not in keys)


def test_malformed_params_still_make_a_question() -> None:
    assert confirm_question(None).title == "Allow ??"
    assert checkpoint_question("x").choices


def test_a_typed_line_names_a_choice_by_key_or_word_and_may_carry_feedback() -> None:
    question = confirm_question(COMMAND)
    deny = question.from_line("  No, use make check ")
    assert deny is not None and deny.choice.key == "n" and deny.feedback == "use make check"
    always = question.from_line("always")
    assert always is not None and always.choice.answered() == {"decision": "allowSession"}
    assert question.from_line("maybe") is None
    assert question.from_line("") is None
    assert question.keys_text() == "y, a, r or n"


def test_the_checkpoint_takes_c_or_s_in_both_clients_never_y_or_n() -> None:
    question = checkpoint_question({"toolsUsed": 3})
    for answer in ("y", "n", "yes", "no"):
        assert question.from_line(answer) is None
        assert question.choice(answer) is None
    go_on, stop = question.from_line("continue"), question.from_line("S")
    assert go_on is not None and go_on.choice.answered() == {"continue": True}
    assert stop is not None and stop.choice.answered() == {"continue": False}
