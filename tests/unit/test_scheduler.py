from __future__ import annotations

import asyncio

from tiller.scheduler import Batch, ToolCall, partition, run_batch


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
    delays = {"t0": 0.05, "t1": 0.0, "t2": 0.02}

    async def run_one(call: ToolCall) -> str:
        await asyncio.sleep(delays[call.id])
        return call.id

    batch = Batch(0, tuple(ToolCall(t, "read", {}) for t in delays), concurrent=True)
    assert await run_batch(batch, run_one) == ["t0", "t1", "t2"]
