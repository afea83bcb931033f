"""The framing (`tiller.faces.common.framing`), the server's stdio (`tiller.faces.lsp.stdio`)
and the JSON-RPC triage (`tiller.faces.common.wire`), without a server."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

from tiller.faces.common.framing import (
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    FrameDecoder,
    Garbled,
    Message,
    encode,
    guess_request_id,
)
from tiller.faces.common.wire import Deliver, Drop, Reject, plain_dict_converter, triage
from tiller.faces.lsp.stdio import FrameWriter, serve


def request(msg_id: int, method: str = "tiller/getState") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {}}


def body_of(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


def messages(frames: list[Any]) -> list[Any]:
    return [f.payload for f in frames if isinstance(f, Message)]


def garbled(frames: list[Any]) -> list[Garbled]:
    return [f for f in frames if isinstance(f, Garbled)]


def feed_all(decoder: FrameDecoder, data: bytes, cuts: list[int] | None = None) -> list[Any]:
    points = sorted({c % (len(data) + 1) for c in cuts or []})
    frames: list[Any] = []
    start = 0
    for point in [*points, len(data)]:
        frames += decoder.feed(data[start:point])
        start = point
    return frames


# --- good streams ---------------------------------------------------------------------------


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(
    payloads=st.lists(
        st.dictionaries(st.text(max_size=8), json_values, max_size=4), min_size=1, max_size=6
    ),
    cuts=st.lists(st.integers(min_value=0), max_size=12),
)
def test_messages_come_out_whole_however_the_bytes_are_split(
    payloads: list[dict[str, Any]], cuts: list[int]
) -> None:
    stream = b"".join(encode(p) for p in payloads)
    decoder = FrameDecoder()
    frames = feed_all(decoder, stream, cuts)
    assert messages(frames) == payloads
    assert not garbled(frames)
    assert not decoder.mid_frame


def test_content_type_headers_any_case_and_stray_newlines_are_accepted() -> None:
    body = body_of(request(1))
    stream = (
        b"\r\n"
        + b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
        + b"content-length: %d\r\n\r\n" % len(body)
        + body
    )
    assert messages(FrameDecoder().feed(stream)) == [request(1)]


# --- bad Content-Length: an error, then the next message ------------------------------------


def test_negative_content_length_is_an_error_and_the_next_message_is_read() -> None:
    frames = FrameDecoder().feed(b"Content-Length: -5\r\n\r\n{}" + encode(request(2)))
    assert [g.reason for g in garbled(frames)] == [
        "Content-Length is not a non-negative integer: b'-5'"
    ]
    assert messages(frames) == [request(2)]


def test_content_length_that_is_not_a_number_is_an_error_and_the_next_message_is_read() -> None:
    frames = FrameDecoder().feed(b"Content-Length: ten\r\n\r\n{}" + encode(request(2)))
    assert len(garbled(frames)) == 1
    assert messages(frames) == [request(2)]


def test_negative_content_length_with_no_body_never_answers_for_the_next_request() -> None:
    # The error used to carry id 2, read from the next frame: request 2 was answered twice.
    frames = FrameDecoder().feed(b"Content-Length: -5\r\n\r\n" + encode(request(2)))
    assert [g.request_id for g in garbled(frames)] == [None]
    assert messages(frames) == [request(2)]


def test_headers_ending_in_lf_only_are_read() -> None:
    body = body_of(request(1))
    lf = b"Content-Type: application/vscode-jsonrpc\ncontent-length: %d\n\n" % len(body) + body
    mixed = b"Content-Length: %d\n\r\n" % len(body) + body
    frames = FrameDecoder().feed(lf + mixed + encode(request(2)))
    assert not garbled(frames)
    assert messages(frames) == [request(1), request(1), request(2)]


@pytest.mark.parametrize(
    ("broken", "reason"),
    [
        (b"Content-Length: %d\r\n", "not 'Name: value'"),  # the empty line is missing
        (b"Content-Length: %d\r\r", "not 'Name: value'"),  # bare CR line ends
        (b"Content-Length: %d\r\n\r", "not 'Name: value'"),
    ],
)
def test_a_header_with_a_broken_end_fails_alone_and_the_next_request_is_read(
    broken: bytes, reason: str
) -> None:
    # The header used to end at the next frame's empty line, so the next frame went with it.
    body = body_of(request(1))
    frames = FrameDecoder().feed(broken % len(body) + body + encode(request(2)))
    assert [g.request_id for g in garbled(frames)] == [1]
    assert reason in garbled(frames)[0].reason
    assert messages(frames) == [request(2)]


def test_a_header_where_the_body_should_be_is_read_at_once_as_the_next_message() -> None:
    decoder = FrameDecoder()
    frames = decoder.feed(b"Content-Length: 500\r\n\r\n" + encode(request(2)))
    assert [(g.reason, g.request_id) for g in garbled(frames)] == [
        ("a header where a body of 500 bytes should be", None)
    ]
    assert messages(frames) == [request(2)]
    assert not decoder.mid_frame


def test_two_different_content_lengths_are_an_error() -> None:
    frames = FrameDecoder().feed(
        b"Content-Length: 5\r\nContent-Length: 6\r\n\r\n{}" + encode(request(2))
    )
    assert [g.reason for g in garbled(frames)] == [
        "Content-Length given twice, differently: [5, 6]"
    ]
    assert messages(frames) == [request(2)]


broken_frames = st.sampled_from(
    [
        b"Content-Length: -5\r\n\r\n",
        b"Content-Length: -5\r\n\r\n" + body_of(request(1)),
        b"Content-Length: ten\r\n\r\n",
        b"Content-Length: 0\r\n\r\n",
        b"Content-Length: 99999999999\r\n\r\n",
        b"Content-Type: x\r\n\r\n",
        b"Content-Length: 10\r\n" + body_of(request(1)),
        b"Content-Length: 10\r\r" + body_of(request(1)),
        b"Content-Length: 10\r\n\r\n" + body_of(request(1)),  # too short
        b"Content-Length: 900\r\n\r\n" + body_of(request(1)),  # too long
        b"Content-Length: 900\r\n\r\n",
        b'Content-Length: 5\r\n\r\n{"id"',
        b"Content-Length: 5\nX\n\n",
        b"Content-Length",
        b"\x00garbage\r\n",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    broken=st.lists(broken_frames, min_size=1, max_size=3),
    cuts=st.lists(st.integers(min_value=0), max_size=8),
)
def test_a_broken_frame_never_costs_the_next_request(broken: list[bytes], cuts: list[int]) -> None:
    """Whatever broken frames come first, the good one after them is read, and no error is
    ever sent in its name (a pause, as the server's stall timer makes, ends a waiting one)."""
    decoder = FrameDecoder()
    frames = feed_all(decoder, b"".join(broken) + encode(request(12)), cuts)
    for _ in broken:  # one pause per frame that waits for bytes that never come
        frames += decoder.expire()
    assert request(12) in messages(frames)
    assert 12 not in [g.request_id for g in garbled(frames)]


class Recorder:
    """An `Endpoint` that keeps what it is handed."""

    def __init__(self) -> None:
        self.frames: list[Any] = []
        self.changed = asyncio.Event()

    def message(self, payload: Any) -> None:
        self.frames.append(Message(payload))
        self.changed.set()

    def garbled(self, frame: Garbled) -> None:
        self.frames.append(frame)
        self.changed.set()

    async def wait_for_message(self, payload: Any) -> None:
        while payload not in messages(self.frames):
            self.changed.clear()
            await self.changed.wait()


async def test_each_frame_left_waiting_after_a_pause_gets_a_pause_of_its_own() -> None:
    # The stall timer was armed only when bytes arrived: the second frame announcing more
    # bytes than it sent held up the request after it until the client wrote again.
    short = b"Content-Length: 900\r\n\r\n" + body_of(request(1))
    read_fd, write_fd = os.pipe()
    recorder = Recorder()
    serving = asyncio.create_task(serve(recorder, read_fd, stall_seconds=0.01))
    try:
        os.write(write_fd, short + short + encode(request(12)))
        await asyncio.wait_for(recorder.wait_for_message(request(12)), 30)
        assert [g.request_id for g in garbled(recorder.frames)] == [1, 1]
    finally:
        os.close(write_fd)
        await serving
        os.close(read_fd)


def test_huge_content_length_is_refused_without_buffering_it() -> None:
    decoder = FrameDecoder()
    frames = decoder.feed(b"Content-Length: 1000000000000000\r\n\r\n")
    assert "larger than the limit" in garbled(frames)[0].reason
    # What follows is skipped, not kept: a megabyte of it leaves nothing buffered.
    assert decoder.feed(b"x" * 1_000_000) == []
    assert not decoder.mid_frame
    assert len(decoder._buffer) < 32
    assert messages(decoder.feed(encode(request(3)))) == [request(3)]


def test_content_length_just_over_64_mib_is_refused() -> None:
    frames = FrameDecoder().feed(b"Content-Length: %d\r\n\r\n" % (MAX_BODY_BYTES + 1))
    assert "larger than the limit" in garbled(frames)[0].reason


def test_too_small_content_length_errors_with_the_request_id_and_resynchronises() -> None:
    body = body_of(request(7))
    frames = FrameDecoder().feed(b"Content-Length: 10\r\n\r\n" + body + encode(request(8)))
    assert [g.request_id for g in garbled(frames)] == [7]
    assert messages(frames) == [request(8)]


def test_too_large_content_length_recovers_the_message_that_follows() -> None:
    body = body_of(request(7))
    frames = FrameDecoder().feed(
        b"Content-Length: %d\r\n\r\n" % (len(body) + 30) + body + encode(request(8)) + b" " * 30
    )
    assert [g.request_id for g in garbled(frames)] == [7]
    assert messages(frames) == [request(8)]


def test_a_sender_gone_quiet_mid_body_gets_an_error_for_that_request() -> None:
    decoder = FrameDecoder()
    body = body_of(request(9))
    assert decoder.feed(b"Content-Length: %d\r\n\r\n" % (len(body) + 50) + body) == []
    assert decoder.mid_frame
    frames = decoder.expire()
    assert [g.request_id for g in garbled(frames)] == [9]
    assert not decoder.mid_frame
    assert messages(decoder.feed(encode(request(10)))) == [request(10)]


def test_a_body_that_is_not_json_is_an_error_and_the_next_message_is_read() -> None:
    junk = b"{not json at all}"
    frames = FrameDecoder().feed(b"Content-Length: %d\r\n\r\n" % len(junk) + junk)
    frames += FrameDecoder().feed(encode(request(4)))
    assert len(garbled(frames)) == 1
    assert messages(frames) == [request(4)]


def test_bytes_before_a_header_are_an_error_then_skipped() -> None:
    frames = FrameDecoder().feed(b"hello there" + encode(request(5)))
    assert len(garbled(frames)) == 1
    assert messages(frames) == [request(5)]


def test_a_header_block_without_end_is_refused_past_its_limit() -> None:
    decoder = FrameDecoder()
    frames = decoder.feed(b"Content-Type: " + b"x" * (MAX_HEADER_BYTES + 10))
    assert "header block longer" in garbled(frames)[0].reason
    assert messages(decoder.feed(encode(request(6)))) == [request(6)]


def test_end_of_stream_inside_a_message_is_reported() -> None:
    decoder = FrameDecoder()
    decoder.feed(b"Content-Length: 100\r\n\r\n" + body_of(request(11))[:30])
    assert [g.request_id for g in garbled(decoder.finish())] == [11]


def test_deeply_nested_json_is_an_error_not_a_crash() -> None:
    body = b"[" * 100_000 + b"]" * 100_000
    frames = FrameDecoder().feed(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert "nested too deeply" in garbled(frames)[0].reason


def test_an_integer_with_thousands_of_digits_becomes_a_float_not_an_error() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"before":' + b"9" * 5000 + b"}}"
    [frame] = FrameDecoder().feed(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert isinstance(frame, Message)
    assert frame.payload["params"]["before"] == float("inf")


@settings(max_examples=200, deadline=None)
@given(junk=st.binary(max_size=300), cuts=st.lists(st.integers(min_value=0), max_size=6))
def test_after_any_garbage_a_later_message_is_read(junk: bytes, cuts: list[int]) -> None:
    """Whatever precedes it, a good message that follows a pause and a header is read."""
    decoder = FrameDecoder()
    feed_all(decoder, junk, cuts)
    decoder.expire()  # the pause
    later = decoder.feed(encode(request(12)))
    assert request(12) in messages(later)


def test_guess_request_id_ignores_ids_inside_params() -> None:
    assert guess_request_id(b'{"jsonrpc":"2.0","method":"x","params":{"id":3}') is None
    assert guess_request_id(b'{"jsonrpc":"2.0","id":"abc","method":"x"') == "abc"
    assert guess_request_id(b'{"id": 1.5}') is None


# --- triage ---------------------------------------------------------------------------------


def test_a_request_without_params_is_delivered_with_params_null() -> None:
    assert triage({"jsonrpc": "2.0", "id": 1, "method": "tiller/interrupt"}) == Deliver(
        {"jsonrpc": "2.0", "id": 1, "method": "tiller/interrupt", "params": None}
    )


def test_an_answer_without_result_becomes_an_error_answer() -> None:
    match triage({"jsonrpc": "2.0", "id": "tiller-1"}):
        case Deliver(message={"id": "tiller-1", "error": {"code": -32600}}):
            pass
        case other:
            raise AssertionError(other)


def test_an_answer_with_a_malformed_error_becomes_an_error_answer() -> None:
    match triage({"jsonrpc": "2.0", "id": 5, "error": "nope"}):
        case Deliver(message={"id": 5, "error": {"code": -32603}}):
            pass
        case other:
            raise AssertionError(other)


def test_invalid_messages_are_rejected_with_their_id_when_usable() -> None:
    assert triage([1, 2]) == Reject(None, -32600, "expected a JSON-RPC object, got a batch (array)")
    assert triage({"jsonrpc": "1.0", "id": 3, "method": "m"}) == Reject(
        3, -32600, "'jsonrpc' must be \"2.0\""
    )
    assert triage({"jsonrpc": "2.0", "id": True, "method": "m"}) == Reject(
        None, -32600, "'id' must be a string or an integer"
    )
    assert isinstance(triage({"jsonrpc": "2.0", "id": 4, "method": 5}), Reject)
    assert isinstance(triage({"jsonrpc": "2.0", "id": 4, "method": "m", "params": 5}), Reject)
    assert isinstance(triage({"jsonrpc": "2.0", "method": "m", "params": 5}), Drop)
    assert isinstance(triage({"jsonrpc": "2.0", "id": None, "result": 1}), Drop)


def test_the_converter_takes_messages_without_params_and_with_extra_members() -> None:
    converter = plain_dict_converter()
    req = converter.structure(
        {"jsonrpc": "2.0", "id": 1, "method": "m", "extra": 1}, JsonRPCRequestMessage
    )
    assert req.params is None
    note = converter.structure({"jsonrpc": "2.0", "method": "m"}, JsonRPCNotification)
    assert note.params is None
    answer = converter.structure(
        {"jsonrpc": "2.0", "id": 1, "result": {"a": 1}}, JsonRPCResponseMessage
    )
    assert answer.result == {"a": 1}


# --- values no handler can take: refused once, for every method ------------------------------


def call(params: Any, msg_id: int | None = 1, method: str = "tiller/anything") -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    return message if msg_id is None else {**message, "id": msg_id}


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        (
            {"text": "a\ud800b"},
            "params.text contains a lone surrogate (\\ud800); send valid Unicode",
        ),
        ({"todos": [{"content": "ok"}, {"content": "\udfff"}]}, "params.todos[1].content contains"),
        (["x", "\udc00"], "params[1] contains a lone surrogate (\\udc00)"),
        ({"a b": {"\ud800": 1}}, 'params["a b"] has a member name with a lone surrogate (\\ud800)'),
        ({"before": 2**63}, "params.before is out of range: numbers must be from -2^63"),
        ({"before": -(2**63) - 1}, "params.before is out of range"),
        ({"n": [float("inf")]}, "params.n[0] is out of range"),
        ({"n": float("nan")}, "params.n is out of range"),
        ({"n": 1e300}, "params.n is out of range"),
    ],
)
def test_a_lone_surrogate_or_a_huge_number_anywhere_in_params_is_invalid_params(
    params: Any, reason: str
) -> None:
    match triage(call(params)):
        case Reject(id=1, code=-32602, reason=said):
            assert said.startswith(reason), said
        case other:
            raise AssertionError(other)
    assert isinstance(triage(call(params, msg_id=None)), Drop)  # a notification: nothing to say


def test_a_5000_digit_integer_in_params_is_invalid_params_not_a_crash() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"n":[-' + b"9" * 5000 + b"]}}"
    [frame] = FrameDecoder().feed(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert isinstance(frame, Message)
    assert triage(frame.payload) == Reject(
        1, -32602, "params.n[0] is out of range: numbers must be from -2^63 to 2^63 - 1"
    )


def test_params_within_range_and_valid_unicode_are_delivered() -> None:
    params = {"text": "naïve 😀 \U0001f600", "n": [2**63 - 1, -(2**63), 1.5, True, None]}
    assert triage(call(params)) == Deliver(call(params))


@settings(max_examples=300, deadline=None)
@given(
    params=st.dictionaries(
        st.text(st.characters(blacklist_categories=()), max_size=4),  # surrogates too
        json_values | st.text(st.characters(blacklist_categories=()), max_size=4),
    )
)
def test_params_are_delivered_exactly_when_utf_8_and_int64_can_take_every_value(
    params: dict[str, Any],
) -> None:
    def fits(leaf: Any) -> bool:
        if isinstance(leaf, str):
            try:
                leaf.encode()
            except UnicodeEncodeError:
                return False
        return not isinstance(leaf, int) or -(2**63) <= leaf < 2**63

    expected = Deliver if all(fits(leaf) for leaf in _leaves(params)) else Reject
    assert isinstance(triage(call(params)), expected)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in [k, *_leaves(v)]]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value]


def test_a_lone_surrogate_in_an_id_or_a_method_is_an_invalid_request() -> None:
    assert triage(call({}, msg_id=None) | {"id": "\ud800"}) == Reject(
        None, -32600, "'id' contains a lone surrogate (\\ud800); send valid Unicode"
    )
    assert triage(call({}, method="tiller/\udc80")) == Reject(
        1, -32600, "'method' contains a lone surrogate (\\udc80); send valid Unicode"
    )


def test_an_answer_with_a_lone_surrogate_becomes_an_error_answer() -> None:
    answer = {"jsonrpc": "2.0", "id": "tiller-1", "result": {"feedback": "\ud800"}}
    match triage(answer):
        case Deliver(message={"id": "tiller-1", "error": {"code": -32603, "message": said}}):
            assert "result.feedback contains a lone surrogate" in said
        case other:
            raise AssertionError(other)


def test_a_large_frame_goes_out_whole_on_a_non_blocking_descriptor() -> None:
    """A frame larger than the pipe's buffer, on a descriptor someone made non-blocking, with
    another thread writing frames too: every frame arrives whole, one after another (a partial
    write once spliced the next frame into a 64 KB prompt event)."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    writer = FrameWriter(os.fdopen(write_fd, "wb"))
    big = {"jsonrpc": "2.0", "method": "tiller/event", "params": {"text": "y\n" * 300_000}}
    small = {"jsonrpc": "2.0", "method": "tiller/state", "params": {"busy": True}}
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_fd, 4096):
            received.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()

    def chatter() -> None:
        for _ in range(50):
            writer.send(small)

    others = threading.Thread(target=chatter)
    others.start()
    writer.send(big)
    others.join()
    writer.close()
    reader.join()
    os.close(read_fd)
    frames = []
    rest = bytes(received)
    while rest:
        header, _, rest = rest.partition(b"\r\n\r\n")
        length = int(header.split(b":")[1])
        frames.append(json.loads(rest[:length]))
        rest = rest[length:]
    assert frames.count(big) == 1 and frames.count(small) == 50 and len(frames) == 51
