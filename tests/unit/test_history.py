from __future__ import annotations

from tiller.model.history import (
    INTERRUPTED_RESULT,
    JOINED_PROMPT_HEADER,
    STEER_HEADER,
    UNANSWERED_RESULTS,
    Message,
    after_unanswered,
    append,
    for_request,
    problems,
    repair,
    steer_block,
    text_block,
    tool_result_block,
    without_turn,
)


def tool_use(tid: str) -> dict[str, object]:
    return {"type": "tool_use", "id": tid, "name": "bash", "input": {"command": "ls"}}


def test_unpaired_tool_use_gets_interrupted_result() -> None:
    messages = (
        Message("user", (text_block("go"),)),
        Message("assistant", (text_block("ok"), tool_use("t1"), tool_use("t2"))),
        Message("user", (tool_result_block("t1", "done", is_error=False),)),
    )
    repaired = repair(messages)
    assert problems(repaired) == []
    results = repaired[-1].content
    assert [b["tool_use_id"] for b in results] == ["t1", "t2"]
    missing = next(b for b in results if b["tool_use_id"] == "t2")
    assert missing["is_error"] is True and missing["content"] == INTERRUPTED_RESULT


def test_trailing_tool_use_is_answered_and_a_new_prompt_merges_after_results() -> None:
    messages = (Message("user", (text_block("go"),)), Message("assistant", (tool_use("t1"),)))
    repaired = repair(messages)
    assert problems(repaired) == []
    with_prompt = append(repaired, "user", [text_block("next question")])
    assert problems(with_prompt) == []
    last = with_prompt[-1].content
    assert last[0]["type"] == "tool_result" and last[-1]["text"] == "next question"


def test_stray_tool_result_and_empty_text_are_dropped() -> None:
    messages = (
        Message("user", (text_block("go"), tool_result_block("ghost", "x", is_error=False))),
        Message("assistant", (text_block("  "),)),
        Message("assistant", (text_block("answer"),)),
    )
    repaired = repair(messages)
    assert problems(repaired) == []
    assert all(b.get("type") != "tool_result" for b in repaired[0].content)
    assert repaired[-1].content == (text_block("answer"),)


def test_two_prompts_in_a_row_merge_into_one_user_message() -> None:
    messages = append((), "user", [text_block("first")])
    messages = append(messages, "user", [text_block("second")])
    assert len(messages) == 1 and len(messages[0].content) == 2


def test_problems_reports_role_order_and_unpaired_use() -> None:
    bad = (Message("assistant", (tool_use("t1"),)), Message("assistant", (text_block("x"),)))
    found = problems(bad)
    assert any("starts with an assistant" in p for p in found)
    assert any("two assistant messages" in p for p in found)
    assert any("tool_use without tool_result" in p for p in found)


def test_problems_catches_duplicate_and_orphan_results() -> None:
    messages = (
        Message("user", (text_block("go"),)),
        Message("assistant", (tool_use("t1"),)),
        Message(
            "user",
            (
                tool_result_block("t1", "a", is_error=False),
                tool_result_block("t1", "b", is_error=False),
                tool_result_block("ghost", "c", is_error=False),
            ),
        ),
    )
    found = problems(messages)
    assert any("duplicate tool_result" in p for p in found)
    assert any("orphan tool_result for ghost" in p for p in found)
    repaired = repair(messages)
    assert problems(repaired) == []
    assert [b["content"] for b in repaired[-1].content] == ["a"]


def test_repair_drops_a_reused_tool_use_id() -> None:
    messages = (
        Message("user", (text_block("go"),)),
        Message("assistant", (tool_use("t1"),)),
        Message("user", (tool_result_block("t1", "a", is_error=False),)),
        Message("assistant", (text_block("again"), tool_use("t1"))),
    )
    assert any("used twice" in p for p in problems(messages))
    assert problems(repair(messages)) == []


def test_a_prompt_stored_without_the_marker_is_still_sent_joined_into_the_last_result() -> None:
    """A history stored before ``UNANSWERED_RESULTS`` was sent with the prompt inside the last
    result, marked: it is sent so ever after (append-only: a thinking block after it is bound
    to that form)."""
    stored = append(
        (
            Message("user", (text_block("go"),)),
            Message("assistant", (tool_use("t1"), tool_use("t2"))),
        ),
        "user",
        [tool_result_block("t1", "done", is_error=False)],
    )
    stored = append(stored, "user", [text_block("actually, stop and explain")])
    sent = for_request(stored)
    assert problems(sent) == []
    last = sent[-1].content
    assert [b["type"] for b in last] == ["tool_result", "tool_result"]
    joined = last[-1]["content"]
    assert [b["tool_use_id"] for b in last] == ["t1", "t2"]  # in the order of the calls
    assert joined[0] == {"type": "text", "text": INTERRUPTED_RESULT}
    assert joined[-1]["text"] == JOINED_PROMPT_HEADER + "actually, stop and explain"
    assert stored[-1].content[-1] == text_block("actually, stop and explain")  # stored as is


def test_without_turn_restores_the_history_before_the_prompt() -> None:
    base = (Message("user", (text_block("q"),)), Message("assistant", (tool_use("t1"),)))
    with_results = append(base, "user", [tool_result_block("t1", "r", is_error=False)])
    prompt = text_block("next")
    turn = append(append(with_results, "user", [prompt]), "assistant", [text_block("partial")])
    assert without_turn(turn, prompt) == with_results
    fresh = append(base[:1], "assistant", [text_block("a")])
    assert without_turn(append(fresh, "user", [prompt]), prompt) == fresh


def test_a_prompt_after_unanswered_results_is_led_by_the_marker_and_sent_as_stored() -> None:
    """Issue 36: a prompt joined into a tool result is read as the tool's output; led by the
    marker, it stays the user's own text after the results, as stored."""
    stored = append(
        (
            Message("user", (text_block("go"),)),
            Message("assistant", (tool_use("t1"),)),
        ),
        "user",
        [tool_result_block("t1", "done", is_error=False)],
    )
    blocks = after_unanswered(stored, [text_block("now something else")])
    assert blocks == [text_block(UNANSWERED_RESULTS), text_block("now something else")]
    stored = append(stored, "user", blocks)
    sent = for_request(stored)
    assert problems(sent) == [] and sent == stored
    assert after_unanswered(stored, [text_block("and more")]) == [text_block("and more")]
    answered = append(stored, "assistant", [text_block("ok")])
    assert after_unanswered(answered, [text_block("next")]) == [text_block("next")]


def test_a_steer_before_the_marker_is_still_joined_and_the_prompt_after_it_kept() -> None:
    stored = append(
        (Message("user", (text_block("go"),)), Message("assistant", (tool_use("t1"),))),
        "user",
        [tool_result_block("t1", "done", is_error=False), steer_block("faster")],
    )
    stored = append(stored, "user", after_unanswered(stored, [text_block("stop there")]))
    [result, marker, prompt] = for_request(stored)[-1].content
    assert [b["text"] for b in result["content"]] == ["done", STEER_HEADER + "faster"]
    assert (marker, prompt) == (text_block(UNANSWERED_RESULTS), text_block("stop there"))
