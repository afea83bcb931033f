from __future__ import annotations

import asyncio

from tiller.core.turn.scheduler import Batch, ToolCall, partition, run_batch


def calls(*names: str) -> list[ToolCall]:
    return [ToolCall(f"t{i}", name, {}) for i, name in enumerate(names)]


def read_only(call: ToolCall) -> bool:
    return call.name in ("read", "grep")


def test_consecutive_reads_share_a_batch_and_writes_split_them() -> None:
    batches = partition(calls("read", "grep", "write", "read", "bash", "bash"), read_only)
    shapes = [([c.name for c in b.calls], b.concurrent) for b in batches]
    assert shapes == [
        (["read", "grep"], True),
        (["write"], False),
        (["read"], False),
        (["bash"], False),
        (["bash"], False),
    ]
    assert [b.index for b in batches] == [0, 1, 2, 3, 4]


async def test_concurrent_batch_keeps_call_order_whatever_finishes_first() -> None:
    """t1 finishes first, then t2, then t0: each waits for the one before it to finish (run
    one at a time, t0 would wait for ever)."""
    ids = ("t0", "t1", "t2")
    finished = {t: asyncio.Event() for t in ids}
    waits_for = {"t0": "t2", "t2": "t1"}
    order: list[str] = []

    async def run_one(call: ToolCall) -> str:
        if call.id in waits_for:
            await finished[waits_for[call.id]].wait()
        order.append(call.id)
        finished[call.id].set()
        return call.id

    batch = Batch(0, tuple(ToolCall(t, "read", {}) for t in ids), concurrent=True)
    assert await asyncio.wait_for(run_batch(batch, run_one), 10) == ["t0", "t1", "t2"]
    assert order == ["t1", "t2", "t0"]
