"""Split one response's tool calls into batches; run a batch; keep results in call order."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from tiller.jsontypes import JSON

R = TypeVar("R")


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    input: JSON


@dataclass(frozen=True)
class Batch:
    index: int
    calls: tuple[ToolCall, ...]
    concurrent: bool


def partition(calls: Sequence[ToolCall], is_read_only: Callable[[ToolCall], bool]) -> list[Batch]:
    """A run of consecutive read-only calls is one concurrent batch; any other call is alone."""
    batches: list[Batch] = []
    run: list[ToolCall] = []

    def close_run() -> None:
        if run:
            batches.append(Batch(len(batches), tuple(run), concurrent=len(run) > 1))
            run.clear()

    for call in calls:
        if is_read_only(call):
            run.append(call)
        else:
            close_run()
            batches.append(Batch(len(batches), (call,), concurrent=False))
    close_run()
    return batches


async def run_batch(batch: Batch, run_one: Callable[[ToolCall], Awaitable[R]]) -> list[R]:
    """Run the calls of a batch (concurrently when it is a read-only run), results in order.

    ``run_one`` turns failures into results, so one failing call never cancels the others.
    """
    if not batch.concurrent:
        return [await run_one(call) for call in batch.calls]
    return list(await asyncio.gather(*(run_one(call) for call in batch.calls)))
