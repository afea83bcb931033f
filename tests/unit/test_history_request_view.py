"""``RequestView`` (the request history kept from step to step, so a step's cost does not grow
with the session) sends exactly what ``for_request`` of the whole history sends, whatever was
appended: tool calls answered or not, stray and reused ids, prompts and steering after tool
results, merged same-role messages, and a history replaced by another (compaction, rewind)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tiller.model import history
from tiller.model.history import Message, RequestView, steer_block, text_block, tool_result_block

IDS = st.sampled_from(["a", "b", "c", "d"])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("uses"), st.lists(IDS, max_size=3)),
        st.tuples(st.just("results"), st.lists(IDS, max_size=3)),
        st.tuples(st.just("prompt"), st.text(max_size=3)),
        st.tuples(st.just("steer"), st.text(max_size=3)),
        st.tuples(st.just("replace"), st.integers(min_value=0, max_value=6)),
    ),
    max_size=25,
)


def grow(messages: tuple[Message, ...], op: str, arg: object) -> tuple[Message, ...]:
    match op:
        case "uses":
            assert isinstance(arg, list)
            blocks = [text_block("thinking aloud")]
            blocks += [{"type": "tool_use", "id": i, "name": "probe", "input": {}} for i in arg]
            return history.append(messages, "assistant", blocks)
        case "results":
            assert isinstance(arg, list)
            results = [tool_result_block(i, f"out {i}", is_error=False) for i in arg]
            return history.append(messages, "user", results)
        case "prompt":
            return history.append(messages, "user", [text_block(f"prompt {arg}")])
        case "steer":
            return history.append(messages, "user", [steer_block(f"steer {arg}")])
        case _:
            assert isinstance(arg, int)
            return tuple(Message(m.role, m.content) for m in messages[:arg])  # new objects


@given(OPS)
def test_the_kept_request_view_equals_for_request_of_the_whole_history(
    ops: list[tuple[str, object]],
) -> None:
    view = RequestView()
    messages: tuple[Message, ...] = ()
    for op, arg in ops:
        messages = grow(messages, op, arg)
        assert view.of(messages) == history.for_request(messages)
        assert view.of(messages) == history.for_request(messages)  # asked twice in a step


def test_a_history_that_is_not_the_one_seen_grown_is_done_whole_again() -> None:
    view = RequestView()
    first = history.append((), "user", [text_block("one")])
    first = history.append(first, "assistant", [text_block("two")])
    assert view.of(first) == history.for_request(first)
    other = history.append((), "user", [text_block("else")])
    assert view.of(other) == history.for_request(other) == other
