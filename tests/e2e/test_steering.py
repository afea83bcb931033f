"""Steering: text sent to the running turn reaches the model at the next step boundary, in the
next request, and a ``steered`` event acknowledges it; with no turn running it is a prompt."""

from __future__ import annotations

from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_turn_basics import text, tool_use
from tiller.model.history import STEER_HEADER


def request_text(api: FakeMessagesAPI, index: int) -> str:
    return str(api.message_requests()[index].body["messages"][-1])


async def test_steer_reaches_the_model_at_the_next_step_and_is_acknowledged(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    answers: list[Any] = []

    async def steer_then_allow(params: Any) -> Any:
        # The turn is mid-step (its call awaits this answer): the steer waits for the results.
        answers.append(await tiller.request("tiller/steer", {"text": "use tabs, not spaces"}))
        return {"decision": "allow"}

    tiller.on_confirm = steer_then_allow
    api.enqueue(
        {"content": [tool_use("bash", "t1", command="touch step-one")]},
        {"content": [text("done with tabs")]},
    )
    ended = await tiller.run("format the file")
    turn = ended["turnId"]
    assert ended["outcome"] == "completed"
    assert answers == [{"status": "steered", "turnId": turn}]
    assert "use tabs" not in request_text(api, 0)
    sent = api.message_requests()[1].body["messages"][-1]
    assert sent["role"] == "user" and sent["content"][0]["type"] == "tool_result"
    assert STEER_HEADER.strip() in str(sent) and "use tabs, not spaces" in str(sent)
    order = [e["type"] for e in tiller.events if e["turnId"] == turn]
    steered = [e for e in tiller.events_of("steered", turn)]
    assert [e["text"] for e in steered] == ["use tabs, not spaces"]
    assert order.index("toolFinished") < order.index("steered") < order.index("textDelta")
    assert len(tiller.events_of("turnStarted")) == 1  # not a new turn


async def test_steer_while_idle_is_a_prompt(tiller: Tiller, api: FakeMessagesAPI) -> None:
    api.enqueue({"content": [text("hello")]})
    answer = await tiller.request("tiller/steer", {"text": "say hello"})
    assert answer["status"] == "started"
    ended = await tiller.turn_end(answer["turnId"])
    assert ended["outcome"] == "completed"
    assert tiller.events_of("turnStarted", answer["turnId"])[0]["prompt"] == "say hello"


async def test_a_steer_the_turn_never_reached_runs_as_the_next_prompt(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {"content": [text("thinking about it for a long time")], "hangAfterEvents": 4},
        {"content": [text("ok, skipping the tests")]},
    )
    started = await tiller.prompt("run everything")
    turn = started["turnId"]
    await tiller.wait_for(lambda: tiller.events_of("textDelta", turn))
    answer = await tiller.request("tiller/steer", {"text": "skip the tests", "turnId": turn})
    assert answer == {"status": "steered", "turnId": turn}
    await tiller.request("tiller/interrupt", {"turnId": turn})
    assert (await tiller.turn_end(turn))["outcome"] == "interrupted"
    nxt = await tiller.wait_for(
        lambda: [e for e in tiller.events_of("turnStarted") if e["turnId"] != turn]
    )
    assert nxt[0]["prompt"] == "skip the tests"
    assert (await tiller.turn_end(nxt[0]["turnId"]))["outcome"] == "completed"
    notices = [e["text"] for e in tiller.events_of("notice")]
    assert any("sent as the next prompt" in n for n in notices)


async def test_slash_steer_is_the_same_gesture_for_every_face(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    answers: list[Any] = []

    async def steer_then_allow(params: Any) -> Any:
        answers.append(await tiller.request("tiller/prompt", {"text": "/steer stop after this"}))
        return {"decision": "allow"}

    tiller.on_confirm = steer_then_allow
    api.enqueue(
        {"content": [tool_use("bash", "t1", command="touch one")]},
        {"content": [text("stopping")]},
    )
    ended = await tiller.run("go")
    assert answers[0]["status"] == "handled"
    assert "stop after this" in request_text(api, 1)
    assert [e["text"] for e in tiller.events_of("steered", ended["turnId"])] == ["stop after this"]
