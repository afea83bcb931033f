"""The usage ledger: every model call of a turn, priced from the catalog, in turnEnded."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_turn_basics import text, tool_use
from tiller.model.models import price, resolve
from tiller.model.usage import Usage

MODEL = "claude-sonnet-4-5"


def api_usage(fresh: int, out: int, read: int, write: int) -> dict[str, int]:
    return {
        "input_tokens": fresh,
        "output_tokens": out,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
    }


async def test_turn_ended_usage_adds_up_every_step_with_its_cost(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(model=MODEL)
    api.enqueue(
        {"content": [tool_use("list_files", "t1")], "usage": api_usage(1200, 40, 0, 3000)},
        {"content": [text("done")], "usage": api_usage(100, 25, 3000, 200)},
    )
    ended = await tiller.run("look around")
    spent = price(Usage(1300, 65, 3000, 3200), resolve(MODEL))
    usage = ended["usage"]
    assert usage["inputTokens"] == 1300 and usage["outputTokens"] == 65
    assert usage["cacheReadTokens"] == 3000 and usage["cacheWriteTokens"] == 3200
    assert spent.cost_usd is not None
    assert usage["costUsd"] == pytest.approx(spent.cost_usd, abs=1e-6)


async def test_a_turn_that_failed_before_any_response_reports_zero_usage(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(model=MODEL)
    api.enqueue({"error": {"status": 400, "type": "invalid_request_error", "message": "no"}})
    failed = await tiller.run("go")
    assert failed["outcome"] == "failed"
    assert failed["usage"]["inputTokens"] == 0 and failed["usage"]["costUsd"] == 0


async def test_session_cost_and_context_survive_a_restart_and_resume(
    start: Any, api: FakeMessagesAPI
) -> None:
    first: Tiller = await start(model=MODEL)
    api.enqueue({"content": [text("ok")], "usage": api_usage(1000, 50, 3000, 200)})
    await first.run("hello")
    before = await first.request("tiller/getState")
    assert before["context"] == {"usedTokens": 4250, "windowTokens": resolve(MODEL).context_window}
    assert before["sessionCostUsd"] and before["sessionCostUsd"] > 0

    second: Tiller = await start(model=MODEL)
    after = await second.request("tiller/session/resume", {"sessionId": before["sessionId"]})
    assert after["context"] == before["context"]
    assert after["sessionCostUsd"] == before["sessionCostUsd"]


async def test_the_one_hour_cache_ttl_is_asked_for_and_priced(
    start: Any, api: FakeMessagesAPI
) -> None:
    """``cacheTtl: "1h"``: every breakpoint asks for it, and the writes (reported by TTL, as
    the API's ``usage.cache_creation`` does) are priced at the 1-hour rate."""
    tiller: Tiller = await start(model=MODEL, cacheTtl="1h")
    api.enqueue({"content": [text("ok")]})
    ended = await tiller.run("hello")
    (sent,) = api.message_requests()
    blocks = [*sent.body["tools"], *sent.body["system"]]
    blocks += [b for m in sent.body["messages"] for b in m["content"] if isinstance(b, dict)]
    marks = [b["cache_control"] for b in blocks if "cache_control" in b]
    assert marks and all(m == {"type": "ephemeral", "ttl": "1h"} for m in marks)
    usage = ended["usage"]
    assert usage["cacheWriteTokens"] > 0
    five_minutes = Usage(
        usage["inputTokens"], usage["outputTokens"], usage["cacheReadTokens"],
        usage["cacheWriteTokens"],
    )  # fmt: skip
    one_hour = replace(five_minutes, cache_write_1h_tokens=usage["cacheWriteTokens"])
    hour_cost = price(one_hour, resolve(MODEL)).cost_usd
    assert hour_cost is not None and usage["costUsd"] == pytest.approx(hour_cost, abs=1e-6)
    assert usage["costUsd"] > (price(five_minutes, resolve(MODEL)).cost_usd or 0)
