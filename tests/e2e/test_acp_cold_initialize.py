"""``tiller --acp`` started cold answers the editor's first ``initialize`` before the SDK has
loaded (tiller.faces.acp.opening), exactly as the SDK answers it, and hands everything else,
including what the client sent right behind it, to the SDK."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest_asyncio

from fakeapi import FakeMessagesAPI
from test_acp import agent_env, tool_results
from test_turn_basics import text, tool_use

COLD = (sys.executable, "-m", "tiller", "--acp")  # no warm start: the agent is not loaded
INITIALIZE = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
    "clientInfo": {"name": "opening-tests", "version": "1"},
}


class RawClient:
    """JSON-RPC lines to and from a cold ``tiller --acp``, as an editor writes them."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))

    async def answer(self, msg_id: int) -> dict[str, Any]:
        """The answer to request ``msg_id`` (what comes before it is skipped)."""
        return await self._next(lambda m: m.get("id") == msg_id and "method" not in m)

    async def asked(self, method: str) -> dict[str, Any]:
        """The agent's next ``method`` request (what comes before it is skipped)."""
        return await self._next(lambda m: m.get("method") == method and "id" in m)

    async def _next(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            message: dict[str, Any] = json.loads(line)
            if wanted(message):
                return message
        raise AssertionError("the agent closed stdout first")


@pytest_asyncio.fixture
async def cold(api: FakeMessagesAPI, tmp_path: Path, workspace: Path) -> AsyncIterator[RawClient]:
    env = agent_env(api, tmp_path / "data")
    env["TILLER_WARM"] = "0"
    process = await asyncio.create_subprocess_exec(
        *COLD,
        env=env,
        cwd=workspace,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=(tmp_path / "agent-stderr.log").open("wb"),
    )
    try:
        yield RawClient(process)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 30)


def request(msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


async def test_the_first_initialize_is_answered_as_the_sdk_answers_a_later_one(
    cold: RawClient,
) -> None:
    cold.send(request(0, "initialize", INITIALIZE))
    early = await cold.answer(0)
    cold.send(request(1, "initialize", INITIALIZE))  # the SDK answers this one
    later = await cold.answer(1)
    assert early["result"] == later["result"]
    assert early["result"]["agentInfo"]["name"] == "tiller"


async def test_requests_sent_right_behind_initialize_reach_the_agent(
    cold: RawClient, workspace: Path
) -> None:
    # One write: the opening reads the initialize and the SDK gets the rest, in order.
    new = request(1, "session/new", {"cwd": str(workspace), "mcpServers": []})
    cold.send(request(0, "initialize", INITIALIZE), new)
    assert (await cold.answer(0))["result"]["protocolVersion"] == 1
    session = await cold.answer(1)
    assert session["result"]["sessionId"].startswith("ses")  # initialize ran behind the answer


async def test_the_capabilities_of_the_early_initialize_reach_the_agent(
    cold: RawClient, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("on disk\n")
    api.enqueue(
        {"content": [tool_use("read_file", "toolu_r", path="notes.txt")]},
        {"content": [text("Read.")]},
    )
    new = request(1, "session/new", {"cwd": str(workspace), "mcpServers": []})
    cold.send(request(0, "initialize", INITIALIZE), new)
    session_id = (await cold.answer(1))["result"]["sessionId"]
    prompt = [{"type": "text", "text": "read the notes"}]
    cold.send(request(2, "session/prompt", {"sessionId": session_id, "prompt": prompt}))
    # fs.readTextFile, offered in that initialize: the agent reads through the editor.
    asked = await cold.asked("fs/read_text_file")
    cold.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"content": "in the buffer\n"}})
    assert (await cold.answer(2))["result"]["stopReason"] == "end_turn"
    assert "in the buffer" in str(tool_results(api, 1)[0]["content"])


async def test_an_initialize_the_opening_cannot_check_goes_to_the_sdk(cold: RawClient) -> None:
    # No protocolVersion: the SDK's InitializeRequest refuses it, as it always did.
    cold.send(request(0, "initialize", {"clientCapabilities": {}}))
    refused = await cold.answer(0)
    assert refused["error"]["code"] == -32602
    cold.send(request(1, "initialize", INITIALIZE))
    assert (await cold.answer(1))["result"]["agentInfo"]["name"] == "tiller"


async def test_a_lone_surrogate_in_the_first_initialize_is_refused_naming_it(
    cold: RawClient,
) -> None:
    params = {**INITIALIZE, "clientInfo": {"name": "\ud800", "version": "1"}}
    cold.send(request(0, "initialize", params))
    refused = await cold.answer(0)
    assert refused["error"]["code"] == -32602
    assert "params.clientInfo.name" in refused["error"]["message"]


async def test_settings_that_fail_after_the_early_answer_are_the_answer_to_session_new(
    api: FakeMessagesAPI, tmp_path: Path, workspace: Path
) -> None:
    # A data folder that cannot be one: only the agent, once loaded, finds that out.
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    env = {**agent_env(api, tmp_path / "data"), "TILLER_WARM": "0"}
    env["TILLER_DATA_DIR"] = str(blocker / "data")
    process = await asyncio.create_subprocess_exec(
        *COLD, env=env, cwd=workspace, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    client = RawClient(process)
    client.send(request(0, "initialize", INITIALIZE))
    assert "result" in await client.answer(0)
    client.send(request(1, "session/new", {"cwd": str(workspace), "mcpServers": []}))
    failed = await client.answer(1)
    assert failed["error"]["code"] == -32602  # what initialize itself answered before
    assert "cannot open the session store" in failed["error"]["message"]
    assert process.stdin is not None
    process.stdin.close()
    await asyncio.wait_for(process.wait(), 30)
