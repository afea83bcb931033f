"""A running command's output arrives while it runs (toolOutput), and an interrupted command
keeps its partial output and real duration, in the event and in what the model sees next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_turn_basics import text, tool_use

SLOW = "for i in 1 2 3; do echo line-$i; sleep 0.3; done; touch finished; sleep 30"


async def allow(params: dict[str, Any]) -> dict[str, Any]:
    return {"decision": "allow"}


async def test_command_output_streams_before_the_command_ends_and_survives_an_interrupt(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller.on_confirm = allow
    api.enqueue(
        {"content": [tool_use("bash", "b1", command=SLOW)]},
        {"content": [text("after the interrupt")]},
    )
    started = await tiller.prompt("run it")
    turn = started["turnId"]
    await tiller.wait_for(lambda: (workspace / "finished").exists(), timeout=20)
    live = "".join(e["text"] for e in tiller.events_of("toolOutput", turn))
    assert "line-1" in live and "line-3" in live
    assert not tiller.events_of("toolFinished", turn)  # the command is still running
    await tiller.request("tiller/interrupt", {"turnId": turn})
    ended = await tiller.turn_end(turn)
    assert ended["outcome"] == "interrupted"
    finished = tiller.events_of("toolFinished", turn)[0]
    assert finished["status"] == "interrupted" and finished["durationMs"] >= 900
    assert "line-3" in finished["output"]
    await tiller.run("what happened?")
    sent = api.message_requests()[-1].body["messages"]
    result = next(
        b for m in sent for b in m["content"]
        if b.get("type") == "tool_result" and b["tool_use_id"] == "b1"
    )  # fmt: skip
    content = result["content"]
    shown = content if isinstance(content, str) else content[0]["text"]
    assert shown.startswith("Interrupted by user") and "line-2" in shown


async def test_live_output_is_coalesced_and_not_kept_in_the_transcript(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    tiller.on_confirm = allow
    api.enqueue(
        {"content": [tool_use("bash", "b1", command="for i in $(seq 400); do echo $i; done")]},
        {"content": [text("done")]},
    )
    ended = await tiller.run("count")
    assert ended["outcome"] == "completed"
    live = tiller.events_of("toolOutput", ended["turnId"])
    assert "".join(e["text"] for e in live).split() == [str(n) for n in range(1, 401)]
    entries = (await tiller.request("tiller/session/transcript"))["entries"]
    assert not [e for e in entries if e["kind"] == "toolOutput"]
    assert any(e["kind"] == "toolFinished" and "400" in e["output"] for e in entries)
