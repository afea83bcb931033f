"""The wire under abuse: raw bytes to the real server's stdin, framed answers read from its stdout.

Guards the bugs of issue 7 item 6: a request without ``params`` was never answered; an answer
without ``result`` left ``confirmTool`` waiting forever; one wrong ``Content-Length`` left the
server deaf for good; ``Content-Length: 10^15`` killed it (MemoryError); an integer out of
range answered -32603 instead of -32602.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
import pytest_asyncio

from fakeapi import FakeMessagesAPI
from harness import FORK, SERVER_COMMAND, server_env
from warm import fork_server

JSON = dict[str, Any]


def frame(message: JSON) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request(msg_id: int | str, method: str, params: Any = None) -> JSON:
    message: JSON = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


async def read_frame(stdout: asyncio.StreamReader) -> JSON | None:
    length = -1
    while True:
        line = await stdout.readline()
        if not line:
            return None
        if not line.strip():
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    message: JSON = json.loads(await stdout.readexactly(length))
    return message


@dataclass
class RawServer:
    """``python -m tiller`` with pipes; everything it writes to stdout, in order."""

    process: asyncio.subprocess.Process
    received: list[JSON] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    answer_requests: Callable[[JSON], bytes | None] | None = None

    async def read_loop(self) -> None:
        assert self.process.stdout is not None
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while (message := await read_frame(self.process.stdout)) is not None:
                self.received.append(message)
                if "method" in message and "id" in message and self.answer_requests:
                    reply = self.answer_requests(message)
                    if reply is not None:
                        self.write(reply)
                self.changed.set()
        self.changed.set()

    def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)

    def send(self, message: JSON) -> None:
        self.write(frame(message))

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 20) -> Any:
        async with asyncio.timeout(timeout):
            while not (found := predicate()):
                if self.process.returncode is not None:
                    raise AssertionError(f"server exited ({self.process.returncode})")
                self.changed.clear()
                await self.changed.wait()
            return found

    def answers(self, msg_id: Any) -> list[JSON]:
        return [m for m in self.received if m.get("id") == msg_id and "method" not in m]

    async def answer(self, msg_id: Any, timeout: float = 20) -> JSON:
        found: list[JSON] = await self.wait_for(lambda: self.answers(msg_id), timeout)
        return found[0]

    async def call(self, msg_id: Any, method: str, params: Any = None) -> JSON:
        self.send(request(msg_id, method, params))
        return await self.answer(msg_id)

    def events(self, type_: str) -> list[JSON]:
        return [
            m["params"]
            for m in self.received
            if m.get("method") == "tiller/event" and m["params"]["type"] == type_
        ]

    def errors_without_id(self) -> list[JSON]:
        return [m for m in self.received if "error" in m and m.get("id") is None]

    async def alive(self, msg_id: Any) -> None:
        """The server still reads and answers."""
        answer = await self.call(msg_id, "tiller/getState", {})
        assert "sessionId" in answer["result"], answer


async def start_raw(env: dict[str, str]) -> asyncio.subprocess.Process:
    """A server with its stdio as pipes: forked from the suite's warm template as the harness's
    servers are (the same stdin, stdout and stderr a spawned one reads and writes, without
    paying the imports again per test), or spawned with ``TILLER_TEST_FORK=0``."""
    if FORK:
        return cast(asyncio.subprocess.Process, await fork_server(env))
    return await asyncio.create_subprocess_exec(
        *SERVER_COMMAND,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )


@pytest_asyncio.fixture
async def raw(api: FakeMessagesAPI, workspace: Path, tmp_path: Path) -> AsyncIterator[RawServer]:
    process = await start_raw(server_env(tmp_path / "data"))
    server = RawServer(process)
    reader = asyncio.create_task(server.read_loop())
    uri = workspace.as_uri()
    options = {
        "provider": {"kind": "anthropic", "baseUrl": api.base_url, "apiKey": "test-key"},
        "model": "claude-test-1",
        "dataDir": str(tmp_path / "data"),
    }
    params = {
        "processId": None,
        "rootUri": uri,
        "workspaceFolders": [{"uri": uri, "name": "ws"}],
        "capabilities": {},
        "initializationOptions": options,
    }
    assert "result" in await server.call("init", "initialize", params)
    server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    yield server
    if process.returncode is None:
        process.kill()
    await process.wait()
    reader.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reader


async def stderr_of(server: RawServer) -> str:
    assert server.process.stderr is not None
    return (await server.process.stderr.read()).decode(errors="replace")


# --- params ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method",
    ["tiller/interrupt", "tiller/getState", "tiller/cycleMode", "tiller/getTodos"],
)
async def test_a_request_without_params_is_answered(raw: RawServer, method: str) -> None:
    answer = await raw.call(1, method)  # no "params" member at all: valid JSON-RPC
    assert "result" in answer, answer


async def test_a_request_without_params_that_needs_them_answers_invalid_params(
    raw: RawServer,
) -> None:
    answer = await raw.call(1, "tiller/setMode")
    assert answer["error"]["code"] == -32602


@pytest.mark.parametrize(
    "params",
    [{"before": 2**70}, {"limit": 2**70}, {"before": -(2**70)}, {"before": -1}, {"limit": 0}],
)
async def test_transcript_integers_out_of_range_answer_invalid_params(
    raw: RawServer, params: JSON
) -> None:
    answer = await raw.call(1, "tiller/session/transcript", params)
    assert answer["error"]["code"] == -32602, answer
    await raw.alive(2)


async def test_an_integer_with_thousands_of_digits_answers_invalid_params(raw: RawServer) -> None:
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"tiller/session/transcript",'
        b'"params":{"before":' + b"9" * 5000 + b"}}"
    )
    raw.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert (await raw.answer(1))["error"]["code"] == -32602


async def test_a_batch_or_a_non_object_is_answered_invalid_request(raw: RawServer) -> None:
    raw.write(frame([request(1, "tiller/getState")]))  # type: ignore[arg-type]
    raw.write(b"Content-Length: 1\r\n\r\n5")
    await raw.wait_for(lambda: len(raw.errors_without_id()) == 2)
    assert {e["error"]["code"] for e in raw.errors_without_id()} == {-32600}
    await raw.alive(2)


# --- framing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    [
        b"Content-Length: -5",
        b"Content-Length: ten",
        b"Content-Length: 1000000000000000",  # 10^15: used to die of MemoryError
        b"Content-Length: 67108865",  # 64 MiB + 1
        b"Content-Length: 0",
        b"Content-Type: application/vscode-jsonrpc",  # no Content-Length at all
    ],
)
async def test_a_bad_content_length_gets_an_error_and_the_server_keeps_listening(
    raw: RawServer, header: bytes
) -> None:
    raw.write(header + b"\r\n\r\n" + json.dumps(request(1, "tiller/getState")).encode())
    raw.send(request(2, "tiller/getState", {}))
    answer = await raw.answer(2)
    assert "result" in answer
    errors = raw.errors_without_id() + raw.answers(1)
    assert [e["error"]["code"] for e in errors] == [-32700], raw.received
    assert raw.process.returncode is None


async def test_a_content_length_too_small_fails_that_request_and_resynchronises(
    raw: RawServer,
) -> None:
    body = json.dumps(request(1, "tiller/getState", {})).encode()
    raw.write(b"Content-Length: 20\r\n\r\n" + body)
    await raw.alive(2)
    assert (await raw.answer(1))["error"]["code"] == -32700


async def test_a_content_length_too_large_recovers_the_next_message(raw: RawServer) -> None:
    body = json.dumps(request(1, "tiller/getState", {})).encode()
    raw.write(b"Content-Length: %d\r\n\r\n" % (len(body) + 40) + body)
    raw.send(request(2, "tiller/getState", {}))
    raw.write(b" " * 40)
    assert "result" in await raw.answer(2)
    assert (await raw.answer(1))["error"]["code"] == -32700


async def test_a_content_length_too_large_then_silence_fails_that_request(
    raw: RawServer,
) -> None:
    body = json.dumps(request(1, "tiller/getState", {})).encode()
    raw.write(b"Content-Length: %d\r\n\r\n" % (len(body) + 40) + body)
    # Nothing more arrives: after a pause the server gives up on it and answers the id.
    assert (await raw.answer(1, timeout=30))["error"]["code"] == -32700
    await raw.alive(2)


async def test_a_body_that_is_not_json_gets_a_parse_error_and_the_next_is_read(
    raw: RawServer,
) -> None:
    raw.write(b"Content-Length: 9\r\n\r\n{nonsense")
    await raw.alive(2)
    assert [e["error"]["code"] for e in raw.errors_without_id()] == [-32700]


async def test_bytes_before_a_header_are_skipped(raw: RawServer) -> None:
    raw.write(b"\x00garbage line\r\n")
    await raw.alive(2)
    assert [e["error"]["code"] for e in raw.errors_without_id()] == [-32700]


async def test_a_negative_content_length_without_a_body_does_not_swallow_the_next_request(
    raw: RawServer,
) -> None:
    # The error for the bad frame used to carry the id of the request after it (read from the
    # following frame), so that request was answered with -32700 before its own answer.
    raw.write(b"Content-Length: -5\r\n\r\n" + frame(request(1, "tiller/getState", {})))
    raw.send(request(2, "tiller/getState", {}))
    assert "result" in await raw.answer(2)
    assert "result" in await raw.answer(1)  # its first answer: the -32700 used to come first
    assert len(raw.answers(1)) == 1
    assert [e["error"]["code"] for e in raw.errors_without_id()] == [-32700]


async def test_headers_ending_in_lf_only_are_read_and_the_next_request_too(
    raw: RawServer,
) -> None:
    # The header block used to end only at the next frame's CRLF CRLF, swallowing that frame.
    body = json.dumps(request(1, "tiller/getState", {})).encode()
    raw.write(b"Content-Type: application/vscode-jsonrpc\nContent-Length: %d\n\n" % len(body))
    raw.write(body)
    raw.send(request(2, "tiller/getState", {}))
    assert "result" in await raw.answer(2)
    assert "result" in await raw.answer(1)
    assert not raw.errors_without_id()


async def test_a_header_without_its_blank_line_fails_alone_and_the_next_request_is_read(
    raw: RawServer,
) -> None:
    body = json.dumps(request(1, "tiller/getState", {})).encode()
    raw.write(b"Content-Length: %d\r\n" % len(body) + body)  # no empty line before the body
    raw.send(request(2, "tiller/getState", {}))
    assert "result" in await raw.answer(2)
    assert (await raw.answer(1))["error"]["code"] == -32700


async def test_end_of_input_inside_a_message_exits_with_a_message_on_stderr(
    raw: RawServer,
) -> None:
    raw.write(b"Content-Length: 500\r\n\r\n" + json.dumps(request(7, "x")).encode())
    assert raw.process.stdin is not None
    raw.process.stdin.close()
    assert await asyncio.wait_for(raw.process.wait(), 20) == 0
    assert "stream ended inside a message" in await stderr_of(raw)


async def test_requests_after_shutdown_are_refused_not_ignored(raw: RawServer) -> None:
    assert (await raw.call(1, "shutdown"))["result"] is None
    assert (await raw.call(2, "tiller/getState"))["error"]["code"] == -32600
    raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert await asyncio.wait_for(raw.process.wait(), 20) == 0


# --- answers from the client ----------------------------------------------------------------


def tool_use(name: str, tool_id: str, **tool_input: Any) -> JSON:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def without_result(message: JSON) -> bytes:
    return frame({"jsonrpc": "2.0", "id": message["id"]})


async def test_a_confirmation_answered_without_result_denies_the_command(
    raw: RawServer, api: FakeMessagesAPI, workspace: Path
) -> None:
    raw.answer_requests = without_result
    api.enqueue(
        {"content": [tool_use("bash", "t1", command="touch made.txt")]},
        {"content": [{"type": "text", "text": "ok"}]},
    )
    turn = (await raw.call(1, "tiller/prompt", {"text": "go"}))["result"]["turnId"]
    ended = await raw.wait_for(lambda: [e for e in raw.events("turnEnded") if e["turnId"] == turn])
    assert ended[0]["trail"] == [{"name": "bash", "status": "denied"}]
    assert [m["method"] for m in raw.received if "method" in m and "id" in m] == [
        "tiller/confirmTool"
    ]
    assert not (workspace / "made.txt").exists()


async def test_a_checkpoint_answered_without_result_stops_the_turn(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path, raw: RawServer
) -> None:
    (workspace / "a.txt").write_text("a\n")
    raw.answer_requests = without_result
    reads = [tool_use("read_file", f"r{i}", path="a.txt") for i in range(21)]
    api.enqueue({"content": reads}, {"content": [tool_use("read_file", "r99", path="a.txt")]})
    turn = (await raw.call(1, "tiller/prompt", {"text": "go"}))["result"]["turnId"]
    ended = await raw.wait_for(lambda: [e for e in raw.events("turnEnded") if e["turnId"] == turn])
    assert ended[0]["outcome"] == "stopped"
    assert any(m.get("method") == "tiller/checkpoint" for m in raw.received)


# --- strings and numbers no handler can take ------------------------------------------------
# A lone surrogate ("\ud800" in JSON) decodes to a Python str that cannot be encoded as UTF-8,
# and an integer of more than 4,300 digits is more than int() takes: both used to reach the
# handlers and fail there with -32603 (UnicodeEncodeError, ValueError).

LONE = "\ud800"


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("tiller/prompt", {"text": f"hi {LONE}"}, "params.text"),
        ("tiller/session/list", {"workspace": LONE}, "params.workspace"),
        ("tiller/session/resume", {"sessionId": LONE}, "params.sessionId"),
        ("tiller/session/fork", {"sessionId": LONE}, "params.sessionId"),
        ("tiller/session/transcript", {"sessionId": LONE}, "params.sessionId"),
        ("tiller/session/slice", {"sessionId": LONE, "spec": "0:"}, "params.sessionId"),
        ("tiller/checkpoints", {"sessionId": LONE}, "params.sessionId"),
        ("tiller/undoRewind", {"undoId": LONE}, "params.undoId"),
        ("tiller/setModel", {"model": LONE}, "params.model"),
        ("tiller/interrupt", {"turnId": LONE}, "params.turnId"),
        ("tiller/getState", {"extra": [1, {LONE: 2}]}, "params.extra[1]"),
    ],
)
async def test_a_lone_surrogate_in_any_string_param_answers_invalid_params_naming_it(
    raw: RawServer, method: str, params: JSON, field: str
) -> None:
    answer = await raw.call(1, method, params)
    assert answer["error"]["code"] == -32602, answer
    assert answer["error"]["message"].startswith(field), answer
    assert "lone surrogate (\\ud800)" in answer["error"]["message"]
    await raw.alive(2)


async def test_a_prompt_with_a_lone_surrogate_leaves_the_session_usable(
    raw: RawServer, api: FakeMessagesAPI
) -> None:
    assert (await raw.call(1, "tiller/prompt", {"text": LONE}))["error"]["code"] == -32602
    api.enqueue({"content": [{"type": "text", "text": "hello"}]})
    turn = (await raw.call(2, "tiller/prompt", {"text": "hi"}))["result"]["turnId"]
    ended = await raw.wait_for(lambda: [e for e in raw.events("turnEnded") if e["turnId"] == turn])
    assert ended[0]["outcome"] == "completed", ended
    [sent] = api.message_requests()
    assert LONE not in json.dumps(sent.body["messages"], ensure_ascii=False)
    entries = (await raw.call(3, "tiller/session/transcript", {}))["result"]["entries"]
    assert [e["prompt"] for e in entries if e["kind"] == "turnStarted"] == ["hi"]


async def test_a_lone_surrogate_in_a_request_id_or_method_answers_invalid_request(
    raw: RawServer,
) -> None:
    raw.send(request(LONE, "tiller/getState", {}))
    raw.send(request(1, f"tiller/{LONE}", {}))
    assert (await raw.answer(1))["error"]["code"] == -32600
    await raw.alive(2)
    assert [e["error"]["code"] for e in raw.errors_without_id()] == [-32600]


async def test_a_slice_spec_with_a_5000_digit_number_answers_a_positioned_invalid_params(
    raw: RawServer,
) -> None:
    answer = await raw.call(1, "tiller/session/slice", {"spec": "0:" + "9" * 5000})
    assert answer["error"]["code"] == -32602, answer
    assert answer["error"]["message"].startswith("slice spec, at position 2:"), answer
    await raw.alive(2)


@pytest.mark.parametrize(
    ("method", "key"),
    [
        ("tiller/setThinking", "budgetTokens"),
        ("tiller/session/transcript", "limit"),
        ("tiller/rewind", "turnId"),
        ("tiller/getState", "anything"),
    ],
)
async def test_a_5000_digit_number_in_any_param_answers_invalid_params_naming_it(
    raw: RawServer, method: str, key: str
) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"%s","params":{"%s":-%s}}' % (
        method.encode(),
        key.encode(),
        b"9" * 5000,
    )
    raw.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    answer = await raw.answer(1)
    assert answer["error"]["code"] == -32602, answer
    assert answer["error"]["message"].startswith(f"params.{key} is out of range"), answer
    await raw.alive(2)


async def test_a_confirmation_answered_with_a_lone_surrogate_denies_the_command(
    raw: RawServer, api: FakeMessagesAPI, workspace: Path
) -> None:
    raw.answer_requests = lambda m: frame(
        {"jsonrpc": "2.0", "id": m["id"], "result": {"decision": "allow", "feedback": LONE}}
    )
    api.enqueue(
        {"content": [tool_use("bash", "t1", command="touch made.txt")]},
        {"content": [{"type": "text", "text": "ok"}]},
    )
    turn = (await raw.call(1, "tiller/prompt", {"text": "go"}))["result"]["turnId"]
    ended = await raw.wait_for(lambda: [e for e in raw.events("turnEnded") if e["turnId"] == turn])
    assert ended[0]["trail"] == [{"name": "bash", "status": "denied"}]
    assert not (workspace / "made.txt").exists()
