"""The fake's ``holdUntil``: a stream held open after ``message_start`` until the test releases
it, driven by the real `anthropic` SDK (what lets an end-to-end test keep a turn streaming for
exactly as long as it needs, on any machine)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import anthropic
import pytest

from fakeapi import FakeMessagesAPI, SpecError
from test_fakeapi import HELLO, MODEL, sdk_client, user


@pytest.fixture
async def api() -> AsyncIterator[FakeMessagesAPI]:
    async with FakeMessagesAPI() as fake:
        yield fake


@pytest.fixture
async def client(api: FakeMessagesAPI) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with sdk_client(base_url=api.base_url, api_key="test", max_retries=0) as sdk:
        yield sdk


async def stream_text(client: anthropic.AsyncAnthropic, seen: list[str]) -> str:
    """The streamed answer's text; the type of every event, as it arrives, in ``seen``."""
    async with client.messages.stream(model=MODEL, max_tokens=100, messages=[user("hi")]) as stream:
        async for event in stream:
            seen.append(event.type)
        final = await stream.get_final_message()
    return "".join(block.text for block in final.content if block.type == "text")


async def test_a_held_stream_sends_message_start_then_the_rest_once_released(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    api.enqueue({**HELLO, "holdUntil": "first"})
    seen: list[str] = []
    streaming = asyncio.create_task(stream_text(client, seen))
    await api.wait_held("first")
    assert api.held == {"first": 1}
    # While held the fake has sent message_start alone: whatever has arrived is no more.
    assert set(seen) <= {"message_start"}
    api.release("first")
    assert await asyncio.wait_for(streaming, 10) == HELLO["content"][0]["text"]
    assert seen[0] == "message_start" and seen[-1] == "message_stop"
    assert api.held == {"first": 0} and api.disconnects == 0


async def test_a_release_before_the_request_lets_it_through(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    api.release("early")
    api.enqueue({**HELLO, "holdUntil": "early"}, {**HELLO, "holdUntil": "early"})
    for _ in range(2):  # a release is for good: the later stream is not held either
        assert await asyncio.wait_for(stream_text(client, []), 10) == HELLO["content"][0]["text"]


async def test_a_client_gone_while_held_is_a_disconnect(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    api.enqueue({**HELLO, "holdUntil": "never"})
    streaming = asyncio.create_task(stream_text(client, []))
    await api.wait_held("never")
    streaming.cancel()
    with pytest.raises(asyncio.CancelledError):
        await streaming
    await api.wait_disconnects(1)
    assert api.held == {"never": 0}


async def test_a_hold_on_a_request_that_is_not_streamed_is_a_clear_error(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    api.enqueue({**HELLO, "holdUntil": "first"})
    with pytest.raises(anthropic.InternalServerError, match="holdUntil needs `stream: true`"):
        await client.messages.create(model=MODEL, max_tokens=100, messages=[user("hi")])


@pytest.mark.parametrize("name", ["", 3, ["first"]])
def test_hold_until_must_name_a_gate(name: object) -> None:
    api = FakeMessagesAPI()
    with pytest.raises(SpecError, match="holdUntil must be a non-empty string"):
        api.enqueue({**HELLO, "holdUntil": name})
