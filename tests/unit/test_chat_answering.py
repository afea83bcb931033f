"""tiller chat: only a line typed after a question was drawn, naming one of its choices, answers
it; type-ahead and a sentence in progress stay the user's prompt (issue 36)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tiller.faces.chat.answering import (
    Answering,
    Draft,
    LineState,
    Picked,
    Prompt,
    Refused,
    Unseen,
    drawn,
    edited,
    hint,
    on_enter,
)
from tiller.faces.client.questions import checkpoint_question, confirm_question, plan_question

EDIT = confirm_question({"name": "edit_file", "input": {"path": "notes.md"}, "preview": {}})


def typed_under(question_line: str, *keys: str) -> LineState:
    """The state once the question was drawn over ``question_line`` and each of ``keys`` was
    the prompt's line in turn."""
    state = drawn(Unseen(), question_line)
    for line in keys:
        state = edited(state, line)
    return state


def test_a_line_typed_before_the_question_was_drawn_is_a_prompt() -> None:
    assert on_enter(EDIT, Unseen(), "y") == Prompt()
    assert on_enter(EDIT, typed_under("y"), "y") == Prompt()  # typed before, drawn over it
    assert on_enter(EDIT, typed_under("an", "any", "any news"), "any news") == Prompt()


def test_a_draft_sent_or_cleared_leaves_the_next_line_to_the_question() -> None:
    state = typed_under("half a", "half a thought", "")
    assert state == Answering()
    answer = on_enter(EDIT, edited(state, "y"), "y")
    assert isinstance(answer, Picked) and answer.choice.answered() == {"decision": "allow"}


def test_a_choice_alone_answers_and_the_first_letter_of_a_sentence_does_not() -> None:
    state = typed_under("")
    for line in ("y", "Y", "yes", " yes "):
        picked = on_enter(EDIT, state, line)
        assert isinstance(picked, Picked) and picked.choice.key == "y", line
    for line in ("any news", "yellow", "a b", "yes, and more", "y\nmore"):
        assert on_enter(EDIT, state, line) == Refused(line), line


def test_a_refused_line_is_sent_as_a_prompt_by_enter_again_and_an_edit_asks_again() -> None:
    state = typed_under("")
    assert on_enter(EDIT, state, "any news") == Refused("any news")
    refused = Answering("any news")
    assert on_enter(EDIT, refused, "any news") == Prompt()
    assert edited(refused, "any news?") == Answering()
    assert "“any news” is not an answer: type y, a or n and Enter" in hint(EDIT, refused)


def test_a_slash_command_or_a_steer_under_a_question_is_sent_at_once() -> None:
    for line in ("/queue", "/rewind", "> use tabs", ">y"):
        assert on_enter(EDIT, Answering(), line) == Prompt(), line


def test_a_choice_that_asks_for_feedback_takes_the_rest_of_the_line() -> None:
    deny = on_enter(EDIT, Answering(), "n, not today")
    assert isinstance(deny, Picked) and deny.choice.answered(deny.feedback) == {
        "decision": "deny",
        "feedback": "not today",
    }
    reject = on_enter(plan_question({}), Answering(), "r smaller steps")
    assert isinstance(reject, Picked) and reject.feedback == "smaller steps"


def test_the_hint_says_where_the_line_stands() -> None:
    assert hint(EDIT, Answering()) == "type y, a or n and Enter"
    assert "your line stays a prompt (Enter sends it;" in hint(EDIT, Draft())
    assert hint(checkpoint_question({}), Unseen()) == "type c or s and Enter"


@given(st.text(max_size=12), st.lists(st.text(max_size=12), max_size=6))
def test_no_line_answers_before_the_question_is_drawn_or_over_a_draft(
    before: str, keys: list[str]
) -> None:
    """Whatever is typed before the draw, and after it while the draft was never emptied, Enter
    sends as a prompt."""
    state: LineState = Unseen()
    for line in keys:
        state = edited(state, line)
        assert on_enter(EDIT, state, line) == Prompt()
    if before:
        state = drawn(state, before)
        for line in keys:
            if not line:
                break
            state = edited(state, line)
            assert on_enter(EDIT, state, line) == Prompt()
