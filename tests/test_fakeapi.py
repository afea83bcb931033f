"""Tests of the fake Messages API itself, driven by the real `anthropic` SDK."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from fakeapi import FakeMessagesAPI, SpecError, validate_messages_request

MODEL = "claude-haiku-4-5"
FAKEAPI = Path(__file__).with_name("fakeapi.py")
HELLO = {"content": [{"type": "text", "text": "Hello from the fake, streamed in pieces."}]}


@pytest.fixture
async def api() -> AsyncIterator[FakeMessagesAPI]:
    async with FakeMessagesAPI() as fake:
        yield fake


@pytest.fixture
async def client(api: FakeMessagesAPI) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(
        base_url=api.base_url, api_key="test", max_retries=0
    ) as sdk:
        yield sdk


def user(content: Any) -> Any:  # messages here are often invalid on purpose
    return {"role": "user", "content": content}


def assistant(content: Any) -> Any:
    return {"role": "assistant", "content": content}


def tool_use(tool_id: str, name: str = "read_file") -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": {"path": "a.py"}}


def tool_result(tool_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}


async def stream_all(
    client: anthropic.AsyncAnthropic, messages: list[Any], **kwargs: Any
) -> tuple[list[Any], anthropic.types.Message]:
    async with client.messages.stream(
        model=MODEL, max_tokens=2048, messages=messages, **kwargs
    ) as stream:
        events = [event async for event in stream]
        return events, await stream.get_final_message()


# -- streaming --------------------------------------------------------------------------------


async def test_streamed_text_and_final_message(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    api.enqueue({**HELLO, "textChunk": 5, "usage": {"input_tokens": 7, "output_tokens": 3}})
    async with client.messages.stream(model=MODEL, max_tokens=100, messages=[user("hi")]) as stream:
        pieces = [text async for text in stream.text_stream]
        final = await stream.get_final_message()

    assert "".join(pieces) == HELLO["content"][0]["text"]
    assert len(pieces) > 1
    assert final.model == MODEL
    assert final.role == "assistant"
    assert final.stop_reason == "end_turn"
    assert final.content[0].type == "text"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (7, 3)
    [recorded] = api.message_requests()
    assert recorded.body["messages"] == [user("hi")]
    assert recorded.body["stream"] is True
    assert recorded.api_key == "test"


async def test_tool_use_input_arrives_intact(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    tool_input = {"path": "src/ünïcode.py", "lines": [1, 2, {"deep": "x" * 40}], "flag": True}
    api.enqueue(
        {
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "name": "read_file", "input": tool_input},
                {"type": "tool_use", "id": "toolu_01", "name": "ls", "input": {}},
            ],
            "inputJsonChunk": 3,
        }
    )
    events, final = await stream_all(client, [user("read it")])

    partials = [
        e.delta.partial_json
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    ]
    assert len(partials) > 10
    assert final.stop_reason == "tool_use"
    first, second = final.content[1], final.content[2]
    assert first.type == "tool_use" and second.type == "tool_use"
    assert first.input == tool_input
    assert first.id.startswith("toolu_fake_")
    assert (second.id, second.name, second.input) == ("toolu_01", "ls", {})


async def test_thinking_blocks_stream(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    thought = "Let me think about this carefully before answering."
    api.enqueue(
        {
            "content": [
                {"type": "thinking", "thinking": thought, "signature": "sig-1"},
                {"type": "text", "text": "Answer."},
            ],
            "textChunk": 8,
        }
    )
    events, final = await stream_all(
        client, [user("think")], thinking={"type": "enabled", "budget_tokens": 1024}
    )

    kinds = [e.delta.type for e in events if e.type == "content_block_delta"]
    assert kinds.count("thinking_delta") == 7
    assert kinds.index("signature_delta") == 7
    thinking = final.content[0]
    assert thinking.type == "thinking"
    assert (thinking.thinking, thinking.signature) == (thought, "sig-1")


async def test_not_streamed_and_connection_reused(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    api.enqueue(HELLO)
    first = await client.messages.create(model=MODEL, max_tokens=10, messages=[user("a")])
    _, second = await stream_all(client, [user("b")])
    third = await client.messages.create(model="other", max_tokens=10, messages=[user("c")])

    assert first.content[0].type == "text" and first.content[0].text == HELLO["content"][0]["text"]
    assert second.content[0].type == "text" and second.content[0].text == "Done."
    assert third.model == "other"
    assert len(api.message_requests()) == 3
    assert api.connections_accepted == 1


async def test_callable_spec_sees_the_request(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    def echo(body: dict[str, Any]) -> dict[str, Any]:
        return {
            "content": [{"type": "text", "text": f"you said {body['messages'][-1]['content']}"}]
        }

    api.enqueue(echo)
    _, final = await stream_all(client, [user("ping")])
    assert final.content[0].type == "text" and final.content[0].text == "you said ping"


async def test_loop_and_when_empty() -> None:
    async with (
        FakeMessagesAPI(HELLO, loop=True) as looping,
        FakeMessagesAPI(when_empty={"content": [{"type": "text", "text": "Empty."}]}) as empty,
    ):
        for fake, expected in ((looping, HELLO["content"][0]["text"]), (empty, "Empty.")):
            async with anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="k") as sdk:
                for _ in range(2):
                    _, final = await stream_all(sdk, [user("x")])
                    assert final.content[0].type == "text" and final.content[0].text == expected


def test_bad_specs_are_refused_when_enqueued() -> None:
    fake = FakeMessagesAPI()
    with pytest.raises(SpecError, match="unknown keys"):
        fake.enqueue({"content": [], "chunk_delay": 1})
    with pytest.raises(SpecError, match="content block"):
        fake.enqueue({"content": [{"type": "image"}]})
    with pytest.raises(SpecError, match="at most one"):
        fake.enqueue({"dropAfterEvents": 1, "hangAfterEvents": 1})
    assert fake.pending == 0


# -- validation -------------------------------------------------------------------------------

INVALID_HISTORIES = {
    "unpaired tool_use": (
        [user("go"), assistant([tool_use("toolu_A")]), user("no result")],
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
        "after: toolu_A",
    ),
    "tool_use in final assistant": (
        [user("go"), assistant([tool_use("toolu_A")])],
        "messages.1: `tool_use` ids were found without `tool_result` blocks",
    ),
    "unexpected tool_result": (
        [user("go"), assistant("hm"), user([tool_result("toolu_X")])],
        "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_X",
    ),
    "duplicate tool_use ids": (
        [
            user("go"),
            assistant([tool_use("toolu_A")]),
            user([tool_result("toolu_A")]),
            assistant([tool_use("toolu_A")]),
            user([tool_result("toolu_A")]),
        ],
        "messages.3.content.0: `tool_use` ids must be unique",
    ),
    "assistant first": (
        [assistant("hi"), user("go")],
        'messages: first message must use the "user" role',
    ),
    "two users in a row": (
        [user("a"), user("b")],
        'roles must alternate between "user" and "assistant", but found multiple "user" roles',
    ),
    "empty string content": (
        [user(""), assistant("x"), user("y")],
        "messages.0: all messages must have non-empty content",
    ),
    "empty list content": (
        [user("a"), assistant([]), user("y")],
        "messages.1: all messages must have non-empty content",
    ),
    "empty text block": (
        [user([{"type": "text", "text": ""}])],
        "messages.0.content.0.text: text content blocks must be non-empty",
    ),
}


@pytest.mark.parametrize("case", INVALID_HISTORIES, ids=list(INVALID_HISTORIES))
async def test_invalid_history_is_refused_without_consuming_a_response(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic, case: str
) -> None:
    messages, expected = INVALID_HISTORIES[case]
    api.enqueue(HELLO)

    with pytest.raises(anthropic.BadRequestError) as caught:
        await stream_all(client, messages)

    assert caught.value.status_code == 400
    assert isinstance(caught.value.body, dict)
    error = caught.value.body["error"]
    assert error["type"] == "invalid_request_error"
    assert expected in error["message"]
    assert api.pending == 1
    assert api.requests[-1].status == 400
    assert api.message_requests() == []


async def test_thinking_budget_is_checked(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    for budget, expected in ((512, "greater than or equal to 1024"), (4096, "`max_tokens` must")):
        with pytest.raises(anthropic.BadRequestError, match=expected):
            await client.messages.create(
                model=MODEL,
                max_tokens=2048,
                messages=[user("x")],
                thinking={"type": "enabled", "budget_tokens": budget},
            )


def test_validation_of_fields_the_sdk_always_sends() -> None:
    good: dict[str, Any] = {"model": MODEL, "max_tokens": 5, "messages": [user("x")]}
    assert validate_messages_request(good) is None
    assert validate_messages_request({**good, "messages": []}) == (
        "messages: at least one message is required"
    )
    for key in ("model", "max_tokens"):
        body = {k: v for k, v in good.items() if k != key}
        assert validate_messages_request(body) == f"{key}: Field required"
    prefill = {**good, "messages": [user("x"), assistant("The answer is")]}
    assert validate_messages_request(prefill) is None
    thinking_turn = {
        **good,
        "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [user("x"), assistant([tool_use("toolu_A")]), user([tool_result("toolu_A")])],
    }
    problem = validate_messages_request(thinking_turn)
    assert problem is not None and "must start with a thinking block" in problem


# -- errors -----------------------------------------------------------------------------------


async def test_rate_limit_then_success_is_retried(api: FakeMessagesAPI) -> None:
    api.enqueue(
        {
            "error": {
                "status": 429,
                "type": "rate_limit_error",
                "message": "slow",
                "retryAfter": "0",
            }
        },
        HELLO,
    )
    async with anthropic.AsyncAnthropic(
        base_url=api.base_url, api_key="test", max_retries=2
    ) as sdk:
        _, final = await stream_all(sdk, [user("x")])

    assert final.content[0].type == "text"
    assert [r.status for r in api.requests] == [429, 200]
    assert api.requests[1].headers["x-stainless-retry-count"] == "1"


async def test_error_spec_without_retries(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    api.enqueue({"error": {"type": "overloaded_error", "message": "Overloaded"}})
    with pytest.raises(anthropic.APIStatusError) as caught:
        await client.messages.create(model=MODEL, max_tokens=5, messages=[user("x")])
    assert caught.value.status_code == 529
    assert caught.value.request_id is not None


async def test_wrong_api_key_is_refused() -> None:
    async with FakeMessagesAPI(api_key="secret") as fake:
        async with anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="wrong") as sdk:
            with pytest.raises(anthropic.AuthenticationError, match="invalid bearer token"):
                await sdk.messages.create(model=MODEL, max_tokens=5, messages=[user("x")])
        async with anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key=None, auth_token="secret"
        ) as bearer:
            await bearer.messages.create(model=MODEL, max_tokens=5, messages=[user("x")])
        assert [r.status for r in fake.requests] == [401, 200]


async def test_mid_stream_error_raises_while_iterating(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    api.enqueue(
        {**HELLO, "midStreamError": {"afterEvents": 3, "type": "overloaded_error"}},
        HELLO,
    )
    seen: list[str] = []
    with pytest.raises(anthropic.APIStatusError, match="overloaded_error"):
        async with client.messages.stream(
            model=MODEL, max_tokens=5, messages=[user("x")]
        ) as stream:
            async for event in stream:
                seen.append(event.type)
    assert seen[:3] == ["message_start", "content_block_start", "content_block_delta"]
    assert "message_stop" not in seen
    _, final = await stream_all(client, [user("again")])
    assert final.stop_reason == "end_turn"


async def test_dropped_connection_raises_while_iterating(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    api.enqueue({**HELLO, "dropAfterEvents": 2, "textChunk": 4})
    seen: list[str] = []
    with pytest.raises((httpx2.HTTPError, anthropic.APIConnectionError)):
        async with client.messages.stream(
            model=MODEL, max_tokens=5, messages=[user("x")]
        ) as stream:
            async for event in stream:
                seen.append(event.type)
    assert seen == ["message_start", "content_block_start"]
    _, final = await stream_all(client, [user("again")])
    assert final.content[0].type == "text" and final.content[0].text == "Done."


# -- interrupts -------------------------------------------------------------------------------


async def test_hanging_stream_can_be_cancelled(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    api.enqueue({**HELLO, "hangAfterEvents": 3})
    seen: list[str] = []
    got_text = asyncio.Event()

    async def consume() -> None:
        async with client.messages.stream(
            model=MODEL, max_tokens=5, messages=[user("x")]
        ) as stream:
            async for event in stream:
                seen.append(event.type)
                if event.type == "text":
                    got_text.set()

    task = asyncio.create_task(consume())
    await api.wait_hanging(timeout=5)
    async with asyncio.timeout(5):
        await got_text.wait()  # the events sent before the hang reach the client
    assert api.hanging == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await api.wait_disconnects(1, timeout=5)
    assert (api.disconnects, api.hanging) == (1, 0)
    assert "content_block_stop" not in seen


async def test_client_closing_a_slow_stream_is_noticed(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    api.enqueue({**HELLO, "chunkDelay": 0.05, "textChunk": 2})
    async with client.messages.stream(model=MODEL, max_tokens=5, messages=[user("x")]) as stream:
        async for event in stream:
            if event.type == "text":
                break
    await api.wait_disconnects(1, timeout=5)


async def test_wait_for_requests_times_out_with_a_clear_message(api: FakeMessagesAPI) -> None:
    with pytest.raises(TimeoutError, match="1 requests"):
        await api.wait_for_requests(1, timeout=0.05)


# -- models -----------------------------------------------------------------------------------


async def test_models_list(client: anthropic.AsyncAnthropic) -> None:
    page = await client.models.list()
    assert [m.id for m in page.data] == ["claude-sonnet-4-5", "claude-haiku-4-5"]
    assert page.data[0].display_name == "Claude Sonnet 4.5"
    assert page.has_more is False
    model = await client.models.retrieve("claude-haiku-4-5")
    assert model.id == "claude-haiku-4-5"


async def test_models_are_configurable() -> None:
    async with (
        FakeMessagesAPI(models=["claude-opus-4-1"]) as fake,
        anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="k") as sdk,
    ):
        ids = [model.id async for model in sdk.models.list()]
    assert ids == ["claude-opus-4-1"]


# -- standalone -------------------------------------------------------------------------------


async def run_standalone(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(FAKEAPI),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def stop_standalone(process: asyncio.subprocess.Process, signum: int) -> bytes:
    process.send_signal(signum)
    async with asyncio.timeout(10):
        stdout, stderr = await process.communicate()
    assert process.returncode == 0, stderr.decode()
    return stdout


def read_if_written(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


async def read_when_written(path: Path, seconds: float = 10) -> str:
    for _ in range(int(seconds / 0.02)):
        if (text := read_if_written(path)) is not None:
            return text
        await asyncio.sleep(0.02)
    raise TimeoutError(f"{path} was not written")


async def test_standalone_with_port_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [HELLO]}))
    port_file = tmp_path / "port"
    process = await run_standalone("--script", str(script), "--port-file", str(port_file))
    try:
        port = int(await read_when_written(port_file))
        async with anthropic.AsyncAnthropic(
            base_url=f"http://127.0.0.1:{port}", api_key="k"
        ) as sdk:
            _, final = await stream_all(sdk, [user("x")])
        assert final.content[0].type == "text"
        assert final.content[0].text == HELLO["content"][0]["text"]
    finally:
        if process.returncode is None:
            stdout = await stop_standalone(process, signal.SIGTERM)
    assert stdout == b""


async def test_standalone_prints_port_and_loops(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [HELLO], "loop": True}))
    process = await run_standalone("--script", str(script))
    try:
        assert process.stdout is not None
        async with asyncio.timeout(10):
            line = await process.stdout.readline()
        word, port = line.decode().split()
        assert word == "PORT"
        async with anthropic.AsyncAnthropic(
            base_url=f"http://127.0.0.1:{port}", api_key="k"
        ) as sdk:
            for _ in range(2):
                _, final = await stream_all(sdk, [user("x")])
                assert final.content[0].type == "text"
                assert final.content[0].text == HELLO["content"][0]["text"]
    finally:
        if process.returncode is None:
            rest = await stop_standalone(process, signal.SIGINT)
    assert rest == b""
