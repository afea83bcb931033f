"""Slice specs: the parser names the position of a mistake and never fails otherwise; a
sliced history is always valid for the API and holds what the spec says."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiller.core.session.slicing import (
    Bound,
    Compact,
    Inject,
    Keep,
    Range,
    SpecError,
    Summarize,
    build,
    parse,
    turns_of,
)
from tiller.model import history
from tiller.model.history import Message, text_block, tool_result_block


def test_the_issue_example_parses_into_its_pieces() -> None:
    pieces = parse(
        "0:4, summarize:4:18:'the auth bug', compact:18:25, inject:'now run the tests', 80%:"
    )
    assert [type(p) for p in pieces] == [Keep, Summarize, Compact, Inject, Keep]
    assert pieces[1] == Summarize(Range(Bound(4), Bound(18), 15), "the auth bug")
    assert pieces[3] == Inject("now run the tests")
    tail = pieces[4]
    assert isinstance(tail, Keep) and tail.range.start == Bound(80, percent=True)
    assert tail.range.end is None


@pytest.mark.parametrize(
    ("spec", "position", "fragment"),
    [
        ("", 0, "empty"),
        ("0:4, bogus:1:2", 5, "unknown piece"),
        ("0:4,, 1:2", 4, "expected ':'"),
        ("inject:'never closed", 7, "not closed"),
        ("150%:", 0, "more than 100%"),
        ("1.5:2", 0, "whole number"),
        ("0:4 1:2", 4, "expected ','"),
        ("summarize:1:2:nope", 14, "quoted"),
        ("inject:''", 0, "must not be empty"),
        ("0:" + "9" * 5000, 2, "(5000 digits) is too large"),  # was ValueError: int() limit
        ("9" * 5000 + "%:", 0, "(5000 digits) is too large"),
        ("0: 1" + "0" * 18, 3, "(19 digits) is too large"),
    ],
)
def test_a_bad_spec_names_the_position_of_the_mistake(
    spec: str, position: int, fragment: str
) -> None:
    with pytest.raises(SpecError) as caught:
        parse(spec)
    assert caught.value.position == position
    assert fragment in caught.value.message and f"position {position}" in caught.value.message


def test_leading_zeros_do_not_make_a_number_too_large() -> None:
    [piece] = parse("0:" + "0" * 5000 + "7")
    assert piece == Keep(Range(Bound(0), Bound(7), 0))


bounds = st.one_of(
    st.none(),
    st.integers(0, 60).map(str),
    st.integers(0, 100).map(lambda n: f"{n}%"),
)
ranges = st.tuples(bounds, bounds).map(lambda b: f"{b[0] or ''}:{b[1] or ''}")
texts = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=20).filter(
    lambda t: t.strip()
)


def quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


pieces = st.one_of(
    ranges,
    ranges.map(lambda r: f"compact:{r}"),
    st.tuples(ranges, st.none() | texts).map(
        lambda p: f"summarize:{p[0]}" + ("" if p[1] is None else f":{quote(p[1])}")
    ),
    texts.map(lambda t: f"inject:{quote(t)}"),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(pieces, min_size=1, max_size=6), st.sampled_from([",", ", ", " , "]))
def test_every_well_formed_spec_parses_with_its_injected_text_intact(
    items: list[str], comma: str
) -> None:
    parsed = parse(comma.join(items))
    assert len(parsed) == len(items)
    for item, piece in zip(items, parsed, strict=True):
        if item.startswith("inject:"):
            assert isinstance(piece, Inject)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=40))
def test_any_text_parses_or_fails_with_a_position_inside_it(spec: str) -> None:
    try:
        parse(spec)
    except SpecError as err:
        assert 0 <= err.position <= len(spec)


def a_history(turns: int, tools_per_turn: int = 1) -> tuple[Message, ...]:
    messages: list[Message] = []
    for t in range(turns):
        messages.append(Message("user", (text_block(f"prompt {t}"),)))
        for k in range(tools_per_turn):
            use = {"type": "tool_use", "id": f"t{t}_{k}", "name": "read_file", "input": {}}
            messages.append(Message("assistant", ({"type": "text", "text": "reading"}, use)))
            result = tool_result_block(f"t{t}_{k}", "x" * 1000, is_error=False)
            messages.append(Message("user", (result,)))
        messages.append(Message("assistant", (text_block(f"answer {t}"),)))
    return tuple(messages)


async def fake_summary(messages: Sequence[Message], focus: str | None) -> str:
    return f"summary of {len(messages)} messages" + (f" on {focus}" if focus else "")


def test_a_slice_keeps_summarizes_compacts_and_injects_in_order() -> None:
    source = a_history(6)
    spec = "0:2, summarize:2:4:'auth', compact:4:5, inject:'now run the tests'"
    sliced = asyncio.run(build(parse(spec), source, fake_summary))
    assert history.problems(sliced) == []
    texts = [b.get("text") for m in sliced for b in m.content if b.get("type") == "text"]
    assert texts[0] == "prompt 0" and "prompt 1" in texts
    assert "prompt 2" not in texts and "prompt 3" not in texts
    assert any(t and t.startswith("Summary of turns 2–3 (auth):") for t in texts)
    assert "prompt 4" in texts and "prompt 5" not in texts
    assert texts[-1] == "now run the tests"
    compacted = [
        b for m in sliced for b in m.content
        if b.get("type") == "tool_result" and b["tool_use_id"] == "t4_0"
    ]  # fmt: skip
    assert "compacted away" in compacted[0]["content"]


def test_turns_never_separate_a_tool_use_from_its_result() -> None:
    for turn in turns_of(a_history(4, tools_per_turn=3)):
        uses = {b["id"] for m in turn for b in m.content if b.get("type") == "tool_use"}
        results = {
            b["tool_use_id"] for m in turn for b in m.content if b.get("type") == "tool_result"
        }
        assert uses == results


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8), st.integers(0, 3), st.lists(pieces, min_size=1, max_size=5))
def test_any_slice_of_any_history_is_valid_for_the_api(
    turns: int, tools: int, items: list[str]
) -> None:
    source = a_history(turns, tools)
    try:
        parsed = parse(", ".join(items))
        sliced = asyncio.run(build(parsed, source, fake_summary))
    except SpecError:
        return  # a range outside the history: refused with its position
    assert history.problems(sliced) == []
    assert not sliced or sliced[0].role == "user"
