"""Parallel subagents: one model response with 3 `task` calls of the explorer kind, each child
running one `bash` `sleep 1` (read-only: sandboxed, no question) before its report.

Measured on the client: the turn's first `toolStarted` of a `task` to its last `toolFinished`
of a `task` (the three children's whole lives, their model calls included), against the sum
of the three `task` calls' own `durationMs`. Perfect parallelism gives wall ~= 1 s and
wall/sum ~= 1/3; one after another would be ~3 s. Target: wall <= 1.5 s.
3 repetitions on one server; the median of each figure is reported.
"""

from __future__ import annotations

from _common import (
    FakeMessagesAPI,
    Figure,
    main,
    median,
    text,
    tool_use,
)
from _lsp import TillerClient, repeated_on_one_server

CHILDREN = 3
SLEEP = 1.0
REPEAT = 3
TARGET_MS = 1500.0


async def one_turn(client: TillerClient, api: FakeMessagesAPI, rep: int) -> dict[str, float]:
    calls = []
    for k in range(CHILDREN):
        marker = f"[bench-{rep}-{k}]"
        calls.append(
            tool_use("task", f"r{rep}_t{k}", description=f"explore {k}",
                     prompt=f"{marker} look around", subagent_type="explore")
        )  # fmt: skip
        api.enqueue_for(
            marker,
            {"content": [tool_use("bash", f"r{rep}_b{k}", command=f"sleep {SLEEP}")]},
            {"content": [text(f"report {k}")]},
        )
    api.enqueue({"content": calls}, {"content": [text("All three reported.")]})
    ended = await client.run(f"delegate {rep}")
    turn = str(ended.params["turnId"])
    if ended.params["outcome"] != "completed":
        raise RuntimeError(f"turn: {ended.params}")
    started = [e for e in client.events("toolStarted", turn) if e.params["name"] == "task"]
    finished = [e for e in client.events("toolFinished", turn) if e.params["name"] == "task"]
    if len(started) != CHILDREN or len(finished) != CHILDREN:
        raise RuntimeError(f"expected {CHILDREN} tasks, saw {len(started)}/{len(finished)}")
    if any(e.params["status"] != "ok" for e in finished):
        raise RuntimeError(f"a task failed: {[e.params for e in finished]}")
    wall = (max(e.at for e in finished) - min(e.at for e in started)) * 1000
    durations = [float(e.params["durationMs"]) for e in finished]
    return {"wall": wall, "slowest": max(durations), "sum": sum(durations)}


async def measure() -> list[Figure]:
    runs = await repeated_on_one_server(one_turn, REPEAT)
    for n, r in enumerate(runs):
        print(
            f"  run {n}: wall {r['wall']:.0f} ms, slowest task {r['slowest']:.0f} ms, "
            f"sum of tasks {r['sum']:.0f} ms"
        )
    note = f"median of {REPEAT}, {CHILDREN} explorers x bash sleep {SLEEP:g}"
    return [
        Figure(
            "3 explorers wall (first task started -> last task finished)",
            median([r["wall"] for r in runs]),
            "ms",
            TARGET_MS,
            "<=",
            note=note,
        ),
        Figure("slowest task (max durationMs)", median([r["slowest"] for r in runs]), "ms"),
        Figure("sum of task durations (one after another)", median([r["sum"] for r in runs]), "ms"),
        Figure(
            "wall/sum",
            median([r["wall"] / r["sum"] for r in runs]),
            "",
            note=f"ideal 1/{CHILDREN} = {1 / CHILDREN:.3f}",
        ),
    ]


if __name__ == "__main__":
    main("parallel subagents", measure)
