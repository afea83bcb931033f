"""Harness overhead per agent step, with an instant model.

The fake API answers every request with one `read_file` call of a tiny file until 200 tool
results are in the history, then with a final text: one turn of 201 model calls and 200 tool
runs. Measured on the client: prompt sent -> `turnEnded` received.

Baseline: the very same 201 request bodies (recorded by the fake during the turn) replayed
right after it from this process with the `anthropic` SDK (`AsyncAnthropic.messages.stream`,
events consumed, final message built) against the same fake. It holds the fake server's work
(parse, validate, stream) and the SDK's own client work, i.e. what any SDK-based agent pays
per model call.

    overhead per step = (turn time - baseline time) / 200

Target: < 5 ms per step. `toolBudget` is 0 (no checkpoints). The fake and the client share
this process; the server runs in its own. This process's garbage collector is off while
timing (collected between phases): the fake keeps every request body it served, and its
full collections (100+ ms) would otherwise land inside the turn or the replay at random.
The server's own GC pauses do count. 3 rounds (each on a fresh session, turn then replay);
the median round is reported. CPU times (from /proc and `time.process_time`) give a
second, load-independent view: the server's CPU per step minus the SDK client's share.
"""

from __future__ import annotations

import gc
import itertools
import time
from dataclasses import dataclass
from typing import Any

import anthropic

from _common import (
    API_KEY,
    FakeMessagesAPI,
    Figure,
    fake_options,
    main,
    median,
    scratch,
    stderr_tail,
    text,
)
from _lsp import TillerClient, cpu_seconds
from _sdk_replay import reading_model, stream_once

STEPS = 200
ROUNDS = 3
TARGET_MS = 5.0
JSON = dict[str, Any]


next_step = reading_model(STEPS)


def enqueue_steps(api: FakeMessagesAPI) -> None:
    api.enqueue(*([next_step] * (STEPS + 1)))


async def replay(sdk: anthropic.AsyncAnthropic, api: FakeMessagesAPI, bodies: list[JSON]) -> float:
    """Stream each recorded body through the SDK; total seconds."""
    enqueue_steps(api)
    started = time.perf_counter()
    for body in bodies:
        await stream_once(sdk, body)
    return time.perf_counter() - started


@dataclass(frozen=True)
class Round:
    turn_s: float
    replay_s: float
    server_cpu_s: float
    bench_cpu_turn_s: float
    bench_cpu_replay_s: float
    gaps_ms: list[float]

    @property
    def per_step_ms(self) -> float:
        return self.turn_s / STEPS * 1000

    @property
    def overhead_ms(self) -> float:
        return (self.turn_s - self.replay_s) / STEPS * 1000

    @property
    def sdk_cpu_s(self) -> float:
        """The SDK client's CPU: it moves from the server (turn) to here (replay)."""
        return max(0.0, self.bench_cpu_replay_s - self.bench_cpu_turn_s)

    @property
    def cpu_overhead_ms(self) -> float:
        return (self.server_cpu_s - self.sdk_cpu_s) / STEPS * 1000


async def one_round(
    client: TillerClient, api: FakeMessagesAPI, sdk: anthropic.AsyncAnthropic
) -> Round:
    await client.request("tiller/session/new")
    api.requests.clear()  # the fake's recorded bodies would pile up round after round
    gc.collect()
    enqueue_steps(api)
    server_cpu, bench_cpu = cpu_seconds(client.pid), time.process_time()
    sent = time.perf_counter()
    turn = await client.prompt("read tiny.txt over and over")
    ended = await client.wait_event("turnEnded", turn, timeout=300)
    turn_s = ended.at - sent
    server_cpu = cpu_seconds(client.pid) - server_cpu
    bench_cpu = time.process_time() - bench_cpu
    if ended.params["outcome"] != "completed":
        raise RuntimeError(f"turn ended {ended.params}")
    finished = client.events("toolFinished", turn)
    if len(finished) != STEPS or any(e.params["status"] != "ok" for e in finished):
        raise RuntimeError(f"expected {STEPS} ok read_file calls, saw {len(finished)}")
    bodies = [r.body for r in api.requests if r.path == "/v1/messages"]
    api.requests.clear()
    gc.collect()
    if len(bodies) != STEPS + 1:
        raise RuntimeError(f"expected {STEPS + 1} model requests, saw {len(bodies)}")
    replay_cpu = time.process_time()
    replay_s = await replay(sdk, api, bodies)
    replay_cpu = time.process_time() - replay_cpu
    gaps = [(b.at - a.at) * 1000 for a, b in itertools.pairwise(finished)]
    return Round(turn_s, replay_s, server_cpu, bench_cpu, replay_cpu, gaps)


async def measure() -> list[Figure]:
    gc.disable()
    try:
        return await measure_without_gc()
    finally:
        gc.enable()


async def measure_without_gc() -> list[Figure]:
    async with scratch() as s, FakeMessagesAPI(api_key=API_KEY) as api:
        (s.workspace / "tiny.txt").write_text("hello\n")
        options = fake_options(api, s.data_dir)
        client = await TillerClient.start(s.workspace, s.data_dir, options, s.stderr)
        sdk = anthropic.AsyncAnthropic(base_url=api.base_url, api_key=API_KEY)
        try:
            await client.run("warm up")
            api.enqueue({"content": [text("warm the bench's own SDK connection")]})
            await stream_once(sdk, api.requests[-1].body)
            rounds = [await one_round(client, api, sdk) for _ in range(ROUNDS)]
        except Exception:
            print(stderr_tail(s.stderr))
            raise
        finally:
            await client.close()
            await sdk.close()
    for n, r in enumerate(rounds):
        print(
            f"  round {n}: turn {r.turn_s * 1000:.0f} ms, SDK replay {r.replay_s * 1000:.0f} ms "
            f"-> {r.overhead_ms:.1f} ms/step; step gap median first/last 20 steps "
            f"{median(r.gaps_ms[:20]):.1f}/{median(r.gaps_ms[-20:]):.1f} ms, "
            f"gaps > 100 ms: {sum(g > 100 for g in r.gaps_ms)}; CPU: server "
            f"{r.server_cpu_s * 1000:.0f} ms, here during turn/replay "
            f"{r.bench_cpu_turn_s * 1000:.0f}/{r.bench_cpu_replay_s * 1000:.0f} ms "
            f"-> SDK client ~{r.sdk_cpu_s * 1000:.0f} ms"
        )
    mid = sorted(rounds, key=lambda r: r.overhead_ms)[ROUNDS // 2]
    note = f"median of {ROUNDS} rounds"
    return [
        Figure("step: turn time / steps", mid.per_step_ms, "ms", note=note),
        Figure("step: SDK-only baseline / steps", mid.replay_s / STEPS * 1000, "ms", note=note),
        Figure(
            "step overhead (Tiller beyond the SDK call)",
            mid.overhead_ms,
            "ms",
            TARGET_MS,
            note=note,
        ),
        Figure(
            "step overhead, CPU view (server CPU - SDK client CPU) / steps",
            median([r.cpu_overhead_ms for r in rounds]),
            "ms",
            note=note,
        ),
        Figure(
            "step gap growth (median of last 20 - first 20 steps)",
            median([median(r.gaps_ms[-20:]) - median(r.gaps_ms[:20]) for r in rounds]),
            "ms",
            note="history grows to 401 messages",
        ),
    ]


if __name__ == "__main__":
    main("per-step overhead", measure)
