"""Tests of the fake Messages API itself, driven by the real `anthropic` SDK."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from fakeapi import FIXTURES, FakeMessagesAPI, SpecError, validate_messages_request
from tiller.model.sdk_adapter import tls_context, tls_settings

MODEL = "claude-haiku-4-5"
FAKEAPI = Path(__file__).with_name("fakeapi.py")
HELLO = {"content": [{"type": "text", "text": "Hello from the fake, streamed in pieces."}]}
# The module's clients share the server's TLS context (one per process): the SDK's own HTTP
# client would load the CA bundle for each (~40 ms of CPU, 78 times a run), and the fake speaks
# plain HTTP.
TLS = tls_context(tls_settings())


def sdk_client(**options: Any) -> anthropic.AsyncAnthropic:
    """The SDK's client with ``options``, on the SDK's default HTTP client (`TLS`)."""
    return anthropic.AsyncAnthropic(
        http_client=anthropic.DefaultAsyncHttpxClient(verify=TLS), **options
    )


@pytest.fixture
async def api() -> AsyncIterator[FakeMessagesAPI]:
    async with FakeMessagesAPI() as fake:
        yield fake


@pytest.fixture
async def client(api: FakeMessagesAPI) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with sdk_client(base_url=api.base_url, api_key="test", max_retries=0) as sdk:
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
    client: anthropic.AsyncAnthropic, messages: list[Any], *, model: str = MODEL, **kwargs: Any
) -> tuple[list[Any], anthropic.types.Message]:
    async with client.messages.stream(
        model=model, max_tokens=2048, messages=messages, **kwargs
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
    assert thinking.thinking == thought
    assert thinking.signature.startswith("sig-1~bound:")  # bound to its prefix


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
            async with sdk_client(base_url=fake.base_url, api_key="k") as sdk:
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
    async with sdk_client(base_url=api.base_url, api_key="test", max_retries=2) as sdk:
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
        async with sdk_client(base_url=fake.base_url, api_key="wrong") as sdk:
            with pytest.raises(anthropic.AuthenticationError, match="invalid bearer token"):
                await sdk.messages.create(model=MODEL, max_tokens=5, messages=[user("x")])
        async with sdk_client(base_url=fake.base_url, api_key=None, auth_token="secret") as bearer:
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
        sdk_client(base_url=fake.base_url, api_key="k") as sdk,
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
        async with sdk_client(base_url=f"http://127.0.0.1:{port}", api_key="k") as sdk:
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
        async with sdk_client(base_url=f"http://127.0.0.1:{port}", api_key="k") as sdk:
            for _ in range(2):
                _, final = await stream_all(sdk, [user("x")])
                assert final.content[0].type == "text"
                assert final.content[0].text == HELLO["content"][0]["text"]
    finally:
        if process.returncode is None:
            rest = await stop_standalone(process, signal.SIGINT)
    assert rest == b""


# -- usage and the prompt cache ---------------------------------------------------------------

CACHED: dict[str, Any] = {"type": "ephemeral"}
TOOLS = [
    {"name": f"tool_{n}", "description": "A tool. " * 20, "input_schema": {"type": "object"}}
    for n in range(3)
]
SYSTEM = [{"type": "text", "text": "You are a careful agent. " * 40, "cache_control": CACHED}]


def cached_tools() -> list[dict[str, Any]]:
    return [*TOOLS[:-1], {**TOOLS[-1], "cache_control": CACHED}]


def text_block(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def marked(block: dict[str, Any]) -> dict[str, Any]:
    return {**block, "cache_control": CACHED}


def plain(messages: list[Any]) -> list[Any]:
    """`messages` without any cache_control (what the cache hashes)."""
    return [
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]
            if isinstance(m["content"], list)
            else m["content"],
        }
        for m in messages
    ]


def conversation(steps: int) -> list[Any]:
    """A turn of `steps` tool calls; the last block carries a breakpoint."""
    messages: list[Any] = [user([{"type": "text", "text": "Read the files."}])]
    for step in range(steps):
        messages.append(assistant([tool_use(f"toolu_{step}")]))
        messages.append(user([{**tool_result(f"toolu_{step}"), "content": "x" * 200}]))
    last = messages[-1]["content"]
    messages[-1] = user([*last[:-1], marked(last[-1])])
    return messages


async def usage_of(
    client: anthropic.AsyncAnthropic, messages: list[Any], *, model: str = MODEL, **more: Any
) -> tuple[anthropic.types.Usage, int]:
    """The final usage of a streamed request, and the prompt's size by count_tokens."""
    params: dict[str, Any] = {"tools": cached_tools(), "system": SYSTEM, **more}
    _, final = await stream_all(client, messages, model=model, **params)
    counted = await client.messages.count_tokens(model=model, messages=plain(messages), **params)
    return final.usage, counted.input_tokens


def total(usage: anthropic.types.Usage) -> int:
    return (
        usage.input_tokens
        + (usage.cache_read_input_tokens or 0)
        + (usage.cache_creation_input_tokens or 0)
    )


async def test_usage_reads_the_prefix_the_previous_request_wrote(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    first, first_size = await usage_of(client, conversation(1))
    second, second_size = await usage_of(client, conversation(2))

    assert first.cache_read_input_tokens == 0
    assert first.cache_creation_input_tokens == first_size  # the tail is a breakpoint
    assert first.input_tokens == 0
    assert second.cache_read_input_tokens == first_size
    assert second.cache_creation_input_tokens == second_size - first_size
    assert (total(first), total(second)) == (first_size, second_size)
    assert second.cache_creation is not None
    assert second.cache_creation.ephemeral_5m_input_tokens == second_size - first_size
    recorded = api.message_requests()[-1].usage
    assert recorded is not None and recorded["cache_read_input_tokens"] == first_size


async def test_usage_is_in_message_start_and_message_delta(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    await usage_of(client, conversation(1))
    events, final = await stream_all(client, conversation(2), tools=cached_tools(), system=SYSTEM)

    start = events[0].message.usage
    [delta] = [e for e in events if e.type == "message_delta"]
    for usage in (start, delta.usage):
        assert usage.input_tokens == final.usage.input_tokens
        assert usage.cache_read_input_tokens == final.usage.cache_read_input_tokens
        assert usage.cache_creation_input_tokens == final.usage.cache_creation_input_tokens
    assert start.output_tokens == 1
    assert delta.usage.output_tokens == final.usage.output_tokens > 1


async def test_uncached_tail_is_input_tokens(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    messages = plain(conversation(1))  # no breakpoint on the tail: tools + system only
    first, size = await usage_of(client, messages)
    second, _ = await usage_of(client, messages)

    assert first.cache_creation_input_tokens == second.cache_read_input_tokens
    assert second.cache_creation_input_tokens == 0
    assert first.input_tokens == second.input_tokens == size - (second.cache_read_input_tokens or 0)
    assert first.input_tokens > 0


async def test_cache_is_looked_up_only_20_blocks_back(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    _, written = await usage_of(client, conversation(2))  # its tail: message block 4
    unrelated, _ = await usage_of(client, [user([marked({"type": "text", "text": "other"})])])
    tools_and_system = unrelated.cache_read_input_tokens
    far = conversation(13)  # the same start, then 22 blocks more: out of the tail's reach
    missed, _ = await usage_of(client, far)
    api.cache.clear()
    await usage_of(client, conversation(2))
    far[4] = user([marked(far[4]["content"][-1])])  # a breakpoint where that request ended
    found, _ = await usage_of(client, far)

    assert tools_and_system is not None and tools_and_system > 0
    assert missed.cache_read_input_tokens == tools_and_system
    assert found.cache_read_input_tokens == written


async def test_cache_is_kept_per_model(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    await usage_of(client, conversation(1))
    other, size = await usage_of(client, conversation(1), model="claude-opus-5-5")
    same, _ = await usage_of(client, conversation(1))

    assert other.cache_read_input_tokens == 0
    assert other.cache_creation_input_tokens == size
    assert same.cache_read_input_tokens == size


async def test_other_thinking_parameters_miss_the_cached_messages(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    chat = [user("a question"), assistant("an answer"), user([marked(text_block("and?"))])]
    await usage_of(client, chat, thinking={"type": "disabled"})
    unrelated, _ = await usage_of(client, [user([marked(text_block("other"))])])
    thinking = {"type": "enabled", "budget_tokens": 1024}
    changed, _ = await usage_of(client, chat, thinking=thinking)
    same, size = await usage_of(client, chat, thinking=thinking)
    absent, _ = await usage_of(client, chat)  # the same as disabled

    assert changed.cache_read_input_tokens == unrelated.cache_read_input_tokens  # tools+system
    assert same.cache_read_input_tokens == size
    assert absent.cache_read_input_tokens == size


async def test_top_level_cache_control_marks_the_last_block(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    messages = [user("a question " * 50)]
    await stream_all(client, messages, extra_body={"cache_control": CACHED})
    _, final = await stream_all(client, messages, extra_body={"cache_control": CACHED})
    assert final.usage.cache_read_input_tokens == total(final.usage)


async def test_more_than_four_breakpoints_are_refused(client: anthropic.AsyncAnthropic) -> None:
    blocks = [marked({"type": "text", "text": f"part {n}"}) for n in range(5)]
    with pytest.raises(anthropic.BadRequestError, match="A maximum of 4 blocks with cache_control"):
        await stream_all(client, [user(blocks)])


async def test_explicit_usage_still_wins(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    api.enqueue({**HELLO, "usage": {"input_tokens": 3, "cache_read_input_tokens": 700}})
    _, final = await stream_all(client, conversation(1), tools=cached_tools(), system=SYSTEM)
    assert (final.usage.input_tokens, final.usage.cache_read_input_tokens) == (3, 700)


# -- the stream's shape: pings, stop reasons, faults --------------------------------------------


async def raw_stream(api: FakeMessagesAPI, **body: Any) -> httpx2.Response:
    """POST a streamed request without the SDK: the bytes as sent."""
    payload = {"model": MODEL, "max_tokens": 100, "messages": [user("hi")], "stream": True}
    headers = {"x-api-key": "test", "anthropic-version": "2023-06-01"}
    async with httpx2.AsyncClient(timeout=10, verify=TLS) as http:
        return await http.post(
            f"{api.base_url}/v1/messages", json={**payload, **body}, headers=headers
        )


def event_names(response: httpx2.Response) -> list[str]:
    return [
        line.removeprefix("event: ")
        for line in response.text.splitlines()
        if line.startswith("event: ")
    ]


async def test_ping_follows_the_first_block_start_and_can_repeat(api: FakeMessagesAPI) -> None:
    api.enqueue(HELLO, {**HELLO, "pingEvery": 2}, {**HELLO, "pingEvery": 0})
    once, repeated, never = [event_names(await raw_stream(api)) for _ in range(3)]

    assert once[:3] == ["message_start", "content_block_start", "ping"]
    assert once.count("ping") == 1
    events = len([n for n in repeated if n != "ping"])
    assert repeated.count("ping") == len(range(2, events, 2))  # after every 2nd, not the last
    assert repeated[:6] == [*once[:3], "content_block_delta", "content_block_delta", "ping"]
    assert never.count("ping") == 0
    assert [n for n in once if n != "ping"] == [n for n in never if n != "ping"]


async def test_after_events_does_not_count_pings(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    api.enqueue({**HELLO, "pingEvery": 1, "dropAfterEvents": 3, "textChunk": 4})
    seen: list[str] = []
    with pytest.raises((httpx2.HTTPError, anthropic.APIConnectionError)):
        async with client.messages.stream(model=MODEL, max_tokens=5, messages=[user("x")]) as s:
            async for event in s:
                seen.append(event.type)
    assert seen[:4] == ["message_start", "content_block_start", "content_block_delta", "text"]
    assert seen.count("content_block_delta") == 1


WRITE = {"path": "notes.md", "content": "a long file " * 20}


async def test_max_tokens_cuts_a_tool_call_mid_input(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    cut = {"type": "tool_use", "name": "write_file", "input": WRITE, "cutAfterInputChars": 40}
    api.enqueue({"content": [{"type": "text", "text": "Writing."}, cut]})
    events, final = await stream_all(client, [user("write")])

    partial = "".join(
        e.delta.partial_json
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    )
    assert partial == json.dumps(WRITE)[:40]
    assert [e.type for e in events][-4:] == [
        "input_json",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert final.stop_reason == "max_tokens"
    assert final.content[1].type == "tool_use"
    assert final.content[1].input == {"path": "notes.md"}  # the SDK drops the open string
    recorded = api.message_requests()[0].response
    assert recorded is not None and recorded["content"][1]["input"] == {"path": "notes.md"}


async def test_cut_off_variants(api: FakeMessagesAPI, client: anthropic.AsyncAnthropic) -> None:
    blocks = [
        {"type": "tool_use", "name": "write_file", "input": WRITE},
        {"type": "text", "text": "never sent"},
    ]
    api.enqueue(
        {
            "content": blocks,
            "cutOff": {"block": 0, "chars": 25, "blockStop": False},
            "stop_reason": "model_context_window_exceeded",
        },
        {
            "content": [{"type": "text", "text": "The answer is forty"}],
            "cutOff": {"block": 0, "chars": 13},
        },
    )
    events, final = await stream_all(client, [user("write")])
    whole = await client.messages.create(model=MODEL, max_tokens=50, messages=[user("again")])

    assert "content_block_stop" not in [e.type for e in events]
    assert final.stop_reason == "model_context_window_exceeded"
    assert len(final.content) == 1
    assert whole.stop_reason == "max_tokens"
    assert whole.content[0].type == "text" and whole.content[0].text == "The answer is"


async def test_refusal_pause_turn_and_stop_sequence(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "Refused by policy."}
    api.enqueue(
        {"content": [], "stop_reason": "refusal", "stop_details": details},
        {"content": [], "stop_reason": "refusal"},
        {**HELLO, "stop_reason": "pause_turn"},
        {**HELLO, "stop_sequence": "###"},
    )
    answers = [(await stream_all(client, [user(str(n))]))[1] for n in range(4)]
    explicit, default, paused, stopped = answers

    assert explicit.stop_reason == "refusal"
    assert explicit.stop_details is not None
    assert (explicit.stop_details.category, explicit.stop_details.explanation) == (
        "cyber",
        "Refused by policy.",
    )
    assert default.stop_details is not None
    assert default.stop_details.type == "refusal" and default.stop_details.category is None
    assert paused.stop_reason == "pause_turn" and paused.stop_details is None
    assert (stopped.stop_reason, stopped.stop_sequence) == ("stop_sequence", "###")


async def test_message_delta_without_usage(api: FakeMessagesAPI) -> None:
    api.enqueue({**HELLO, "omitDeltaUsage": True}, HELLO)
    without, with_usage = [await raw_stream(api) for _ in range(2)]

    def delta_of(response: httpx2.Response) -> dict[str, Any]:
        lines = [line for line in response.text.splitlines() if '"message_delta"' in line]
        parsed: dict[str, Any] = json.loads(lines[0].removeprefix("data: "))
        return parsed

    assert "usage" not in delta_of(without)
    assert set(delta_of(with_usage)["usage"]) == {
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "output_tokens",
    }
    assert delta_of(with_usage)["delta"] == {
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "stop_details": None,
    }


async def test_garbage_sse_breaks_the_sdk_parse(
    api: FakeMessagesAPI, client: anthropic.AsyncAnthropic
) -> None:
    api.enqueue({**HELLO, "garbageAfterEvents": 2})
    with pytest.raises(ValueError):  # json.JSONDecodeError from the SDK's event parsing
        await stream_all(client, [user("x")])
    raw = await raw_stream(api, messages=[user("y")])
    assert raw.status_code == 200  # when_empty: a normal answer again


async def test_hang_before_headers(api: FakeMessagesAPI) -> None:
    api.enqueue({**HELLO, "hangBeforeHeaders": True})
    async with sdk_client(base_url=api.base_url, api_key="test", max_retries=0, timeout=0.5) as sdk:
        with pytest.raises(anthropic.APITimeoutError):
            await stream_all(sdk, [user("x")])
    await api.wait_disconnects(1)
    assert api.requests[-1].status == 0


async def test_request_ids_look_like_the_apis(api: FakeMessagesAPI) -> None:
    api.enqueue(HELLO, {"error": {"status": 529, "type": "overloaded_error"}})
    ok, failed = await raw_stream(api), await raw_stream(api)
    ids = [ok.headers["request-id"], failed.headers["request-id"], failed.json()["request_id"]]

    assert all(re.fullmatch(r"req_011C[1-9A-HJ-NP-Za-km-z]{20}", i) for i in ids), ids
    assert ids[0] != ids[1] == ids[2]


# -- the real API's 400s ----------------------------------------------------------------------

ADAPTIVE = {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}}
BUDGET = {"thinking": {"type": "enabled", "budget_tokens": 2048}}
REFUSALS: dict[str, tuple[str, dict[str, Any], str | None]] = {
    "budget form on Claude 5": (
        "claude-sonnet-5-5",
        BUDGET,
        '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive"',
    ),
    "budget form on a Claude 5 id not in the table": (
        "claude-haiku-5-7",
        BUDGET,
        '"thinking.type.enabled" is not supported',
    ),
    "budget form on Opus 4.7": ("claude-opus-4-7", BUDGET, "is not supported for this model"),
    "adaptive on Claude 5": ("claude-opus-5-5", ADAPTIVE, None),
    "adaptive on 4.6": ("claude-sonnet-4-6", ADAPTIVE, None),
    "budget form on 4.6": ("claude-sonnet-4-6", BUDGET, None),
    "adaptive on 4.5": (
        "claude-sonnet-4-5",
        ADAPTIVE,
        "adaptive thinking is not supported on this model",
    ),
    "adaptive on a dated 4.5 id": (
        "claude-haiku-4-5-20251001",
        ADAPTIVE,
        "adaptive thinking is not supported on this model",
    ),
    "adaptive with a budget": (
        "claude-sonnet-5-5",
        {"thinking": {"type": "adaptive", "budget_tokens": 2048}},
        "thinking.adaptive.budget_tokens: Extra inputs are not permitted",
    ),
    "unknown effort": (
        "claude-sonnet-5-5",
        {"thinking": {"type": "adaptive"}, "output_config": {"effort": "extreme"}},
        "output_config.effort: Input should be",
    ),
    "disabled where only between_tools turns it off": (
        "claude-sonnet-5-5",
        {"thinking": {"type": "disabled"}},
        '"thinking.type.disabled" is not supported for this model.',
    ),
    "between_tools where it is not offered": (
        "claude-haiku-4-5",
        {"thinking": {"type": "between_tools"}},
        '"thinking.type.between_tools" is not supported for this model.',
    ),
    "temperature on Claude 5": (
        "claude-sonnet-5-5",
        {"temperature": 0.2},
        "`temperature` is deprecated for this model.",
    ),
    "default temperature on Claude 5": ("claude-sonnet-5-5", {"temperature": 1}, None),
    "top_p on Claude 5": ("claude-opus-5-5", {"top_p": 1}, "`top_p` is deprecated"),
    "top_k on Opus 4.7": ("claude-opus-4-7", {"top_k": 5}, "`top_k` is deprecated"),
    "sampling on 4.5": ("claude-sonnet-4-5", {"temperature": 0.2, "top_k": 5}, None),
    "temperature with thinking on 4.5": (
        "claude-sonnet-4-5",
        {**BUDGET, "temperature": 0.5},
        "`temperature` may only be set to 1 when thinking is enabled",
    ),
    "max_tokens above the model's output limit": (
        "claude-haiku-4-5",
        {"max_tokens": 64_001},
        "max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for "
        "claude-haiku-4-5",
    ),
    "budget not below max_tokens": (
        "claude-sonnet-4-6",
        {**BUDGET, "max_tokens": 2048},
        "`max_tokens` must be greater than `thinking.budget_tokens`",
    ),
    "anything on an id the fake does not know": (
        "claude-test-1",
        {
            **BUDGET,
            "temperature": 0.1,
            "max_tokens": 10**6,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
        },
        "`temperature` may only be set to 1",
    ),
}


@pytest.mark.parametrize("case", REFUSALS, ids=list(REFUSALS))
def test_model_rules_of_the_real_api(case: str) -> None:
    model, params, expected = REFUSALS[case]
    body = {"model": model, "max_tokens": 4096, "messages": [user("x")], **params}
    problem = validate_messages_request(body)
    if expected is None:
        assert problem is None
    else:
        assert problem is not None and expected in problem


async def test_a_400_for_a_model_rule_reaches_the_sdk(client: anthropic.AsyncAnthropic) -> None:
    with pytest.raises(anthropic.BadRequestError, match=r"thinking\.type\.enabled") as caught:
        await client.messages.create(
            model="claude-sonnet-5-5",
            max_tokens=4096,
            messages=[user("x")],
            thinking={"type": "enabled", "budget_tokens": 2048},
        )
    assert caught.value.request_id is not None


def test_prompt_over_the_context_window_is_refused() -> None:
    body = {"model": "claude-haiku-4-5", "max_tokens": 10, "messages": [user("word " * 170_000)]}
    problem = validate_messages_request(body)
    assert problem is not None and re.fullmatch(
        r"prompt is too long: \d+ tokens > 200000 maximum", problem
    )
    assert validate_messages_request({**body, "model": "claude-sonnet-5-5"}) is None


async def test_text_after_tool_result_is_refused_only_when_asked() -> None:
    history = [
        user("go"),
        assistant([tool_use("toolu_A")]),
        user([tool_result("toolu_A"), {"type": "text", "text": "and also this"}]),
    ]
    async with (
        FakeMessagesAPI(reject_text_after_tool_result=True) as strict,
        sdk_client(base_url=strict.base_url, api_key="k", max_retries=0) as sdk,
    ):
        with pytest.raises(
            anthropic.BadRequestError, match=re.escape("messages.2.content.1: a `text`")
        ):
            await stream_all(sdk, history)
        split = [
            *history[:2],
            user([tool_result("toolu_A")]),
            assistant("ok"),
            user("and also this"),
        ]
        await stream_all(sdk, split)
    body = {"model": MODEL, "max_tokens": 10, "messages": history}
    assert validate_messages_request(body) is None


async def test_models_carry_limits_and_thinking_capabilities(
    client: anthropic.AsyncAnthropic,
) -> None:
    async with (
        FakeMessagesAPI(models=["claude-sonnet-5-5", "claude-sonnet-4-5", "claude-test-1"]) as fake,
        sdk_client(base_url=fake.base_url, api_key="k") as sdk,
    ):
        sonnet5, sonnet45, unknown = [m async for m in sdk.models.list()]

    assert (sonnet5.max_input_tokens, sonnet5.max_tokens) == (1_000_000, 128_000)
    assert sonnet5.display_name == "Claude Sonnet 5.5"
    assert sonnet5.line == "sonnet"
    assert sonnet5.capabilities is not None and sonnet45.capabilities is not None
    types5, types45 = sonnet5.capabilities.thinking.types, sonnet45.capabilities.thinking.types
    assert (types5.adaptive.supported, types5.enabled.supported) == (True, False)
    assert (types5.disabled.supported, types5.between_tools.supported) == (False, True)
    assert (types45.adaptive.supported, types45.enabled.supported) == (False, True)
    assert (sonnet45.max_input_tokens, sonnet45.max_tokens) == (200_000, 64_000)
    assert (unknown.max_input_tokens, unknown.capabilities) == (None, None)


# -- recorded streams -------------------------------------------------------------------------


def recordings() -> list[Path]:
    return sorted(FIXTURES.glob("*.txt"))


@pytest.mark.parametrize("path", recordings(), ids=[p.stem for p in recordings()])
async def test_recorded_stream_is_served_verbatim(api: FakeMessagesAPI, path: Path) -> None:
    recorded = await asyncio.to_thread(path.read_bytes)
    api.enqueue({"replay": path.stem})
    served = await raw_stream(api)

    assert served.status_code == 200
    assert served.headers["content-type"].startswith("text/event-stream")
    assert served.content.startswith(recorded.rstrip(b"\n"))
    assert served.content.rstrip(b"\n") == recorded.rstrip(b"\n")
    assert served.content.endswith(b"\n\n")


async def test_raw_sse_is_served_exactly(api: FakeMessagesAPI) -> None:
    text = 'event: message_start\ndata: {"type": "message_start"'  # cut, no blank line
    api.enqueue({"replaySse": text})
    assert (await raw_stream(api)).content == text.encode()
    with pytest.raises(SpecError, match="a replay takes only chunkDelay"):
        api.enqueue({"replay": "basic_response", "content": []})
    with pytest.raises(SpecError, match="cannot read"):
        api.enqueue({"replay": "no_such_recording"})


# -- images (https://docs.anthropic.com/en/docs/build-with-claude/vision) ------------------------

PNG_1PX = (  # a 1×1 png
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAA"
    "AABJRU5ErkJggg=="
)


def image_block(media_type: str, data: str = PNG_1PX) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def test_image_blocks_are_taken_as_the_vision_docs_describe() -> None:
    body: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 5,
        "messages": [user([image_block("image/png"), {"type": "text", "text": "what is it?"}])],
    }
    assert validate_messages_request(body) is None


def test_an_image_with_a_type_the_api_does_not_take_is_refused() -> None:
    body: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 5,
        "messages": [user([image_block("image/bmp")])],
    }
    assert validate_messages_request(body) == (
        "messages.0.content.0.image.source.base64.media_type: Input should be 'image/jpeg', "
        "'image/png', 'image/gif' or 'image/webp'"
    )


def test_an_image_whose_data_is_another_type_is_refused() -> None:
    body: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 5,
        "messages": [user([image_block("image/jpeg")])],
    }
    assert validate_messages_request(body) == (
        "messages.0.content.0.image.source.base64: The image was specified using the image/jpeg "
        "media type, but the image appears to be a image/png image"
    )


def test_an_image_over_5_mb_of_base64_is_refused() -> None:
    big = "A" * (5 * 1024 * 1024 + 4)
    body: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 5,
        "messages": [user([image_block("image/png", big)])],
    }
    problem = validate_messages_request(body)
    assert problem is not None and "image exceeds 5 MB maximum" in problem


def test_an_image_in_an_assistant_message_is_refused() -> None:
    body: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 5,
        "messages": [user("x"), assistant([image_block("image/png")]), user("y")],
    }
    assert validate_messages_request(body) == (
        "messages.1.content.0: `image` blocks can only be in `user` messages"
    )
