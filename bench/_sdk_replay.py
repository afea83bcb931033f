"""The bare SDK side of the step benches: an instant model that reads a tiny file a number of
times, and a recorded request body streamed through the SDK as a bare loop would."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anthropic

from _common import text, tool_results_in, tool_use

JSON = dict[str, Any]


def reading_model(steps: int) -> Callable[[JSON], JSON]:
    """The instant model: read the tiny file until ``steps`` results are in, then finish."""

    def next_step(body: JSON) -> JSON:
        done = tool_results_in(body)
        if done < steps:
            return {"content": [tool_use("read_file", f"toolu_step_{done}", path="tiny.txt")]}
        return {"content": [text(f"Read it {done} times.")]}

    return next_step


async def stream_once(client: anthropic.AsyncAnthropic, body: JSON) -> float:
    """Stream one recorded body (without its ``stream`` member) to the end; seconds."""
    params = {k: v for k, v in body.items() if k != "stream"}
    started = time.perf_counter()
    async with client.messages.stream(**params) as stream:
        async for _event in stream:
            pass
        await stream.get_final_message()
    return time.perf_counter() - started
