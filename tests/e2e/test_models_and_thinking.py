"""The model layer end to end: tiller/listModels from the catalog and /v1/models, setModel
checked against the API, thinking validated at the edge and sent in the form each model takes.

The real server over stdio, the real SDK over HTTP, tests/fakeapi.py recording request bodies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from fakeapi import FakeMessagesAPI
from harness import Tiller, start_tiller, stop_tiller

SAMPLING = {"temperature", "top_p", "top_k"}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


async def test_list_models_gives_window_output_and_thinking_form_per_model(
    start: Any, api: FakeMessagesAPI
) -> None:
    api.models = ["claude-sonnet-5-5", "claude-haiku-4-5-20251001", "claude-later-9"]
    tiller = await start(model="claude-sonnet-5-5")
    listed = await tiller.request("tiller/listModels")
    assert listed["current"] == "claude-sonnet-5-5"
    by_id = {m["id"]: m for m in listed["models"]}
    assert by_id["claude-sonnet-5-5"] == {
        "id": "claude-sonnet-5-5",
        "displayName": "Claude Sonnet 5.5",
        "contextWindow": 1_000_000,
        "maxOutput": 128_000,
        "thinking": "adaptive",
    }
    haiku = by_id["claude-haiku-4-5-20251001"]
    assert (haiku["contextWindow"], haiku["maxOutput"], haiku["thinking"]) == (
        200_000,
        64_000,
        "budget",
    )
    later = by_id["claude-later-9"]  # not in the catalog: guessed from its version
    assert (later["contextWindow"], later["maxOutput"], later["thinking"]) == (
        200_000,
        32_000,
        "adaptive",
    )


async def test_set_model_refuses_an_id_the_api_does_not_know(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    with pytest.raises(JsonRpcInvalidParams) as caught:
        await tiller.request("tiller/setModel", {"model": "claude-sonet-4-5"})
    assert "unknown model 'claude-sonet-4-5'" in str(caught.value)
    assert "claude-sonnet-4-5" in str(caught.value)  # the offered ids are listed
    state = await tiller.request("tiller/getState")
    assert state["model"] == "claude-test-1"  # nothing changed
    assert await tiller.request("tiller/setModel", {"model": "claude-haiku-4-5"}) == {
        "model": "claude-haiku-4-5"
    }


async def test_set_model_accepts_an_alias_of_a_listed_snapshot(
    start: Any, api: FakeMessagesAPI
) -> None:
    api.models = ["claude-sonnet-4-5-20250929"]
    tiller = await start()
    answer = await tiller.request("tiller/setModel", {"model": "claude-sonnet-4-5"})
    assert answer == {"model": "claude-sonnet-4-5"}


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"enabled": True, "budgetTokens": 4096}, "budgetTokens (4096) must be below maxTokens"),
        ({"enabled": True, "budgetTokens": 100}, "budgetTokens"),
        ({"enabled": True, "effort": "extreme"}, "params.effort"),
        ({"enabled": "yes"}, "enabled"),
    ],
)
async def test_set_thinking_is_validated_naming_the_field(
    start: Any, params: dict[str, Any], fragment: str
) -> None:
    tiller = await start(model="claude-sonnet-4-5", maxTokens=4096)
    with pytest.raises(JsonRpcInvalidParams) as caught:
        await tiller.request("tiller/setThinking", params)
    assert fragment in str(caught.value)
    assert (await tiller.request("tiller/getState"))["thinking"]["enabled"] is False


async def test_set_thinking_answers_the_v2_shape_and_keeps_unset_fields(
    start: Any,
) -> None:
    tiller = await start(model="claude-sonnet-5-5")
    answer = await tiller.request("tiller/setThinking", {"enabled": True, "effort": "low"})
    assert answer == {"enabled": True, "effort": "low", "budgetTokens": None}
    answer = await tiller.request("tiller/setThinking", {"enabled": False})
    assert answer == {"enabled": False, "effort": "low", "budgetTokens": None}
    assert (await tiller.request("tiller/getState"))["thinking"] == answer


async def test_initialize_refuses_a_budget_not_below_max_tokens(tmp_path: Path) -> None:
    options = {
        "model": "claude-sonnet-4-5",
        "maxTokens": 2048,
        "thinking": {"enabled": True, "budgetTokens": 2048},
        "provider": {"kind": "scripted", "script": "demo"},
    }
    with pytest.raises(JsonRpcException) as caught:
        tiller = await start_tiller(tmp_path, tmp_path / "data", options)
        await stop_tiller(tiller)
    assert "initializationOptions.thinking.budgetTokens" in str(caught.value)


async def test_a_turn_on_sonnet_5_5_sends_adaptive_thinking_and_effort_and_returns_signatures(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("hello\n")
    api.enqueue(
        {
            "content": [
                {"type": "thinking", "thinking": "read it first", "signature": "sig-A"},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "read_file",
                    "input": {"path": "a.txt"},
                },
            ]
        },
        {"content": [text("It says hello.")]},
    )
    tiller = await start(model="claude-sonnet-5-5", thinking={"enabled": True, "effort": "high"})
    ended = await tiller.run("what is in a.txt?")
    assert ended["outcome"] == "completed", ended
    first, second = (r.body for r in api.message_requests())
    for body in (first, second):
        assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
        assert body["output_config"] == {"effort": "high"}
        assert body["max_tokens"] == 128_000
        assert not SAMPLING & body.keys()
    produced = api.message_requests()[0].response
    assert produced is not None
    signature = produced["content"][0]["signature"]
    assert signature.startswith("sig-A~bound:")  # the fake binds it to its prefix
    assert second["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "read it first",
        "signature": signature,
    }
    thought = "".join(e["text"] for e in tiller.events_of("thinkingDelta"))
    assert thought == "read it first"


async def test_thinking_is_on_by_default_where_the_model_decides(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller = await start(model="claude-sonnet-5-5")
    assert (await tiller.request("tiller/getState"))["thinking"]["enabled"] is True
    await tiller.run("hi")
    body = api.message_requests()[-1].body
    assert body["thinking"]["type"] == "adaptive" and "output_config" not in body


async def test_a_turn_on_a_4_5_model_sends_the_budget_form(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller = await start(
        model="claude-sonnet-4-5", thinking={"enabled": True, "budgetTokens": 2048}
    )
    await tiller.run("think")
    body = api.message_requests()[-1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 64_000 and "output_config" not in body
    # an effort alone on a budget-only model becomes a budget
    await tiller.request(
        "tiller/setThinking", {"enabled": True, "effort": "low", "budgetTokens": None}
    )
    await tiller.run("think less")
    assert api.message_requests()[-1].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


async def test_thinking_off_on_sonnet_5_5_sends_between_tools_not_disabled(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller = await start(model="claude-sonnet-5-5", thinking={"enabled": False})
    await tiller.run("quick")
    body = api.message_requests()[-1].body
    assert body["thinking"] == {"type": "between_tools"} and "output_config" not in body


async def test_thinking_slash_command_sets_an_effort(start: Any, api: FakeMessagesAPI) -> None:
    tiller = await start(model="claude-opus-5-5")
    await tiller.prompt("/thinking max")
    assert (await tiller.request("tiller/getState"))["thinking"] == {
        "enabled": True,
        "effort": "max",
        "budgetTokens": None,
    }
    await tiller.run("hard one")
    assert api.message_requests()[-1].body["output_config"] == {"effort": "max"}
