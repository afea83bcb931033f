"""Parallel read-only batch: one model response with 8 `bash` calls of `sleep 0.2`.

The batch's wall time is measured on the client, from the arrival of its first `toolStarted`
to the arrival of its last `toolFinished`; each call's own time is its `durationMs`.
Perfect parallelism gives wall ~= slowest call and wall/sum ~= 1/8. Target: wall/slowest <= 1.3.
5 repetitions on one server; the median of each figure is reported.
"""

from __future__ import annotations

from _common import (
    FakeMessagesAPI,
    Figure,
    main,
    median,
    tool_use,
)
from _lsp import TillerClient, repeated_on_one_server

CALLS = 8
SLEEP = 0.2
REPEAT = 5
TARGET_RATIO = 1.3


async def one_batch(client: TillerClient, api: FakeMessagesAPI, rep: int) -> dict[str, float]:
    calls = [tool_use("bash", f"r{rep}_c{k}", command=f"sleep {SLEEP}") for k in range(CALLS)]
    api.enqueue({"content": calls})  # then the fake's default final answer, "Done."
    ended = await client.run(f"batch {rep}")
    turn = str(ended.params["turnId"])
    if ended.params["outcome"] != "completed":
        raise RuntimeError(f"batch turn: {ended.params}")
    started = client.events("toolStarted", turn)
    finished = client.events("toolFinished", turn)
    if len(started) != CALLS or len(finished) != CALLS:
        raise RuntimeError(f"expected {CALLS} calls, saw {len(started)}/{len(finished)}")
    if not all(e.params["concurrent"] and e.params["batch"] == 0 for e in started):
        raise RuntimeError("the calls were not one concurrent batch")
    if any(e.params["status"] != "ok" for e in finished):
        raise RuntimeError(f"a call failed: {[e.params for e in finished]}")
    wall = (max(e.at for e in finished) - min(e.at for e in started)) * 1000
    durations = [float(e.params["durationMs"]) for e in finished]
    # When each call really began on the server: its toolFinished arrival - its durationMs.
    began = [e.at * 1000 - float(e.params["durationMs"]) for e in finished]
    return {
        "start_spread": max(began) - min(began),
        "wall": wall,
        "slowest": max(durations),
        "fastest": min(durations),
        "sum": sum(durations),
    }


async def measure() -> list[Figure]:
    runs = await repeated_on_one_server(one_batch, REPEAT)
    for n, r in enumerate(runs):
        print(
            f"  run {n}: wall {r['wall']:.1f} ms, slowest {r['slowest']:.0f} ms, "
            f"fastest {r['fastest']:.0f} ms, sum {r['sum']:.0f} ms, "
            f"calls began over {r['start_spread']:.0f} ms"
        )
    note = f"median of {REPEAT}, {CALLS} x sleep {SLEEP}"
    return [
        Figure(
            "batch wall (first toolStarted -> last toolFinished)",
            median([r["wall"] for r in runs]),
            "ms",
            note=note,
        ),
        Figure("batch slowest call (max durationMs)", median([r["slowest"] for r in runs]), "ms"),
        Figure("batch sum of call durations", median([r["sum"] for r in runs]), "ms"),
        Figure(
            "batch wall/slowest",
            median([r["wall"] / r["slowest"] for r in runs]),
            "",
            TARGET_RATIO,
            "<=",
            note=note,
        ),
        Figure(
            "batch start spread (first to last call really starting)",
            median([r["start_spread"] for r in runs]),
            "ms",
            note="toolFinished arrival - durationMs",
        ),
        Figure(
            "batch wall/sum",
            median([r["wall"] / r["sum"] for r in runs]),
            "",
            note=f"ideal 1/{CALLS} = {1 / CALLS:.3f}",
        ),
    ]


if __name__ == "__main__":
    main("parallel read-only batch", measure)
