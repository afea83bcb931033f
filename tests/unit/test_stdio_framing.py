"""The stdio framing (`tiller.stdio`) and the JSON-RPC triage (`tiller.wire`), without a server."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

from tiller.stdio import (
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    FrameDecoder,
    Garbled,
    Message,
    encode,
    guess_request_id,
)
from tiller.wire import Deliver, Drop, Reject, plain_dict_converter, triage


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
    payloads=st.lists(st.dictionaries(st.text(max_size=8), json_values), min_size=1, max_size=6),
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
    assert [g.request_id for g in decoder.finish()] == [11]


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
