"""Interrupt at any point, type-ahead, mode/model/thinking controls and bad params."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from fakeapi import FakeMessagesAPI
from harness import Tiller
from processes import host_pids, processes_with, sleep_marker
from test_turn_basics import text, tool_use
from tiller.model.history import UNANSWERED_RESULTS, Message, problems
from tiller.workspace.sandbox import bwrap_works


def assert_valid_history(api: FakeMessagesAPI) -> None:
    """The fake answers 400 to an invalid history; double-check the last request too."""
    last = api.message_requests()[-1].body["messages"]
    assert problems([Message.from_api(m) for m in last]) == []


async def test_interrupt_mid_stream_closes_the_stream_and_keeps_streamed_text(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {
            "content": [
                text("The first part arrives, then the model stalls forever…"),
                tool_use("bash", "t1", command="echo never"),
            ],
            "hangAfterEvents": 6,
        },
        {"content": [text("fresh answer")]},
    )
    started = await tiller.prompt("long answer please")
    turn = started["turnId"]
    await tiller.wait_for(lambda: tiller.events_of("textDelta", turn))
    answer = await tiller.request("tiller/interrupt")
    assert answer == {"interrupted": True, "turnId": turn}
    ended = await tiller.turn_end(turn)
    assert ended["outcome"] == "interrupted"
    await api.wait_disconnects(1, timeout=5)
    # The next request is valid and carries the text streamed before the interrupt.
    ended2 = await tiller.run("try again")
    assert ended2["outcome"] == "completed"
    assert_valid_history(api)
    messages = api.message_requests()[-1].body["messages"]
    assert messages[1]["role"] == "assistant"
    assert messages[1]["content"][0]["text"].startswith("The first part")
    assert all(b["type"] != "tool_use" for b in messages[1]["content"])


async def test_interrupt_mid_bash_kills_the_process_group_and_answers_the_tool_use(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start(permissionMode="acceptEdits")

    async def allow(params: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "allow"}

    tiller.on_confirm = allow
    marker = sleep_marker(30)
    api.enqueue(
        {
            "content": [
                tool_use("read_file", "t0", path="."),
                tool_use("bash", "t1", command=f"sleep {marker} & echo started > pid.txt; wait"),
            ]
        },
        {"content": [text("after")]},
    )
    started = await tiller.prompt("run the long thing")
    turn = started["turnId"]
    pid_file = workspace / "pid.txt"
    await tiller.wait_for(lambda: tiller.events_of("toolStarted", turn) and pid_file.exists())
    # Its shell (and the supervisor's argv), its sleep.
    await tiller.wait_for(lambda: len(processes_with(marker)) >= 2)
    await tiller.request("tiller/interrupt")
    ended = await tiller.turn_end(turn)
    assert ended["outcome"] == "interrupted"
    assert {"name": "bash", "status": "interrupted"} in ended["trail"]
    await tiller.wait_for(lambda: not processes_with(marker))
    await tiller.run("continue")
    assert_valid_history(api)
    blocks = api.message_requests()[-1].body["messages"][2]["content"]
    # The prompt follows the results as the user's own text, led by the marker.
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "text", "text"]
    assert [b["text"] for b in blocks[2:]] == [UNANSWERED_RESULTS, "continue"]
    bash_result = next(r for r in blocks if r.get("tool_use_id") == "t1")
    assert bash_result["is_error"] is True
    assert bash_result["content"] == "Interrupted by user"


def _is_bwrap(pid: int) -> bool:
    return Path(f"/proc/{pid}/exe").resolve().name == "bwrap"


@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap does not work here")
async def test_interrupting_a_sandboxed_command_leaves_no_process_behind(
    start: Any, api: FakeMessagesAPI
) -> None:
    # The turn ends without waiting for bwrap (SIGKILL to its session: the kernel empties its
    # PID namespace): every process of the command must still go, the ones that ignore
    # SIGTERM and the ones that left its session too.
    tiller: Tiller = await start()

    async def allow(params: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "allow"}

    tiller.on_confirm = allow
    marker = sleep_marker(30)
    command = f"(trap '' TERM; sleep {marker}) & setsid sleep {marker} & sleep {marker}; wait"
    api.enqueue({"content": [tool_use("bash", "t1", command=command)]})
    turn = (await tiller.prompt("run it"))["turnId"]
    # bwrap (its argv holds the command), the shells, the three sleeps.
    running = await tiller.wait_for(
        lambda: len(processes_with(marker)) >= 5 and processes_with(marker)
    )
    assert any(_is_bwrap(pid) for pid in running)
    await tiller.request("tiller/interrupt")
    ended = await tiller.turn_end(turn)
    assert ended["outcome"] == "interrupted"
    assert {"name": "bash", "status": "interrupted"} in ended["trail"]
    await tiller.wait_for(lambda: not processes_with(marker))


async def test_interrupt_while_waiting_for_confirmation_cancels_the_request(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    asked = asyncio.Event()
    release = asyncio.Event()
    gave_up = asyncio.Event()

    async def slow_user(params: dict[str, Any]) -> dict[str, Any]:
        asked.set()
        try:
            await release.wait()
            return {"decision": "allow"}  # a late answer: must be ignored
        finally:
            gave_up.set()  # answered late, or cancelled by the server's $/cancelRequest

    tiller.on_confirm = slow_user
    api.enqueue(
        {"content": [tool_use("bash", "t1", command="touch late.txt")]},
        {"content": [text("ok")]},
    )
    started = await tiller.prompt("touch it")
    await asyncio.wait_for(asked.wait(), 10)
    await tiller.request("tiller/interrupt")
    ended = await tiller.turn_end(started["turnId"])
    assert ended["outcome"] == "interrupted"
    release.set()
    await asyncio.wait_for(gave_up.wait(), 10)
    # The late answer went out before this round trip ended, and the next turn after it.
    await tiller.request("tiller/getState")
    await tiller.run("next")
    assert not (workspace / "late.txt").exists()
    assert not tiller.client.messages  # no "Error in server" shown to the user
    assert_valid_history(api)


async def test_stop_typed_while_busy_interrupts_instead_of_queueing(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue({"content": [text("streaming, then stalling " * 20)], "hangAfterEvents": 4})
    started = await tiller.prompt("go")
    await tiller.wait_for(lambda: tiller.events_of("textDelta", started["turnId"]))
    answer = await tiller.prompt("  STOP ")
    assert answer["status"] == "handled"
    ended = await tiller.turn_end(started["turnId"])
    assert ended["outcome"] == "interrupted"
    state = await tiller.request("tiller/getState")
    assert state["queue"] == [] and state["busy"] is False


async def test_prompts_typed_while_busy_queue_and_drain_in_order(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {"content": [text("first answer, slowly")], "chunkDelay": 0.1},
        {"content": [text("second answer")]},
        {"content": [text("third answer")]},
    )
    first = await tiller.prompt("one")
    assert (await tiller.prompt("two")) == {"status": "queued", "queuePosition": 1}
    assert (await tiller.prompt("three")) == {"status": "queued", "queuePosition": 2}
    assert any(s["queue"] == ["two", "three"] for s in tiller.states)
    await tiller.wait_for(lambda: len(tiller.events_of("turnEnded")) == 3, timeout=20)
    prompts = [e["prompt"] for e in tiller.events_of("turnStarted")]
    assert prompts == ["one", "two", "three"]
    assert tiller.events_of("turnEnded")[0]["turnId"] == first["turnId"]
    user_texts = [
        m["content"][-1]["text"]
        for m in api.message_requests()[-1].body["messages"]
        if m["role"] == "user"
    ]
    assert user_texts == ["one", "two", "three"]


async def test_clear_queue_drops_waiting_prompts(tiller: Tiller, api: FakeMessagesAPI) -> None:
    api.enqueue({"content": [text("slow " * 30)], "chunkDelay": 0.05})
    first = await tiller.prompt("one")
    await tiller.prompt("two")
    await tiller.prompt("three")
    assert await tiller.request("tiller/clearQueue") == {"cleared": 2}
    await tiller.turn_end(first["turnId"])
    await tiller.run("four")  # started at once: nothing was left in the queue to run first
    assert [e["prompt"] for e in tiller.events_of("turnStarted")] == ["one", "four"]


async def test_cycle_mode_goes_default_accept_edits_plan_default(tiller: Tiller) -> None:
    modes = [(await tiller.request("tiller/cycleMode"))["mode"] for _ in range(3)]
    assert modes == ["acceptEdits", "plan", "default"]
    assert [s["mode"] for s in tiller.states][-3:] == modes
    assert (await tiller.request("tiller/setMode", {"mode": "plan"})) == {"mode": "plan"}


async def test_model_switch_is_seen_in_the_next_request(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    await tiller.run("first")
    api.models.append("claude-other-2")  # setModel checks the id against the API's list
    assert (await tiller.request("tiller/setModel", {"model": "claude-other-2"})) == {
        "model": "claude-other-2"
    }
    await tiller.run("second")
    models = [r.body["model"] for r in api.message_requests()]
    assert models == ["claude-test-1", "claude-other-2"]
    assert tiller.states[-1]["model"] == "claude-other-2"


async def test_list_models_comes_from_the_provider(tiller: Tiller) -> None:
    listed = await tiller.request("tiller/listModels")
    ids = [m["id"] for m in listed["models"]]
    assert "claude-sonnet-4-5" in ids and "claude-test-1" in ids
    assert listed["current"] == "claude-test-1"


async def test_thinking_toggle_is_sent_to_the_api(tiller: Tiller, api: FakeMessagesAPI) -> None:
    api.enqueue(
        {
            "content": [
                {"type": "thinking", "thinking": "let me think about it"},
                text("thought through"),
            ]
        }
    )
    answer = await tiller.request("tiller/setThinking", {"enabled": True, "budgetTokens": 2048})
    assert answer == {"enabled": True, "effort": None, "budgetTokens": 2048}
    ended = await tiller.run("think")
    assert ended["final"] == "thought through"
    assert api.message_requests()[-1].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert "".join(e["text"] for e in tiller.events_of("thinkingDelta")) == "let me think about it"


@pytest.mark.parametrize(
    ("method", "params", "fragment"),
    [
        ("tiller/prompt", {}, "'text'"),
        ("tiller/prompt", {"text": 5}, "'text'"),
        ("tiller/setMode", {"mode": "yolo"}, "unknown mode"),
        ("tiller/setModel", {"model": ""}, "'model'"),
        ("tiller/setThinking", {"enabled": "yes"}, "enabled"),
        ("tiller/setThinking", {"enabled": True, "budgetTokens": 10}, "budgetTokens"),
    ],
)
async def test_bad_params_answer_32602_and_change_nothing(
    tiller: Tiller, method: str, params: dict[str, Any], fragment: str
) -> None:
    before = await tiller.request("tiller/getState")
    with pytest.raises(JsonRpcException) as caught:
        await tiller.request(method, params)
    assert caught.value.code == -32602
    assert fragment in str(caught.value)
    assert await tiller.request("tiller/getState") == before


async def test_sigterm_to_the_server_kills_running_commands(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    async def allow(params: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "allow"}

    tiller.on_confirm = allow
    marker = sleep_marker(30)
    command = f"echo started > pid.txt; exec sleep {marker}"
    api.enqueue({"content": [tool_use("bash", "t1", command=command)]})
    await tiller.prompt("sleep")
    await tiller.wait_for(lambda: host_pids("sleep", marker))
    server = tiller.client._server
    assert server is not None
    server.terminate()
    await asyncio.wait_for(server.wait(), 10)
    await tiller.wait_for(lambda: not processes_with(marker))
