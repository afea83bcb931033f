"""Interrupt latency: `tiller/interrupt` sent -> `turnEnded` received, on the client.

(a) mid-stream: the fake API streams a few text events, then stalls (``hangAfterEvents``);
    the interrupt goes out as soon as the first ``textDelta`` has arrived.
(b) mid-bash: the model calls ``bash`` with ``sleep 30`` (read-only, so nothing asks);
    the interrupt goes out 50 ms after ``toolStarted`` arrived, while the command runs.
(c) during SDK warm-up: a fresh server gets a prompt right after ``initialized``, while the
    anthropic SDK is still being imported in a worker thread (it takes seconds); the interrupt
    goes out 0.2 s, 0.5 s, ... later. N=5, a new server each time.

(a) and (b): one server serves all iterations (a warm-up turn first loads the SDK), N=20.
Target: p95 < 100 ms.
"""

from __future__ import annotations

import asyncio
import time

from _common import (
    API_KEY,
    FakeMessagesAPI,
    Figure,
    fake_options,
    main,
    percentile,
    scratch,
    stderr_tail,
    text,
    tool_use,
)
from _lsp import TillerClient, children

N = 20
N_WARMUP = 5
TARGET_MS = 100.0
BASH_SETTLE_SECONDS = 0.05


async def interrupt_and_time(client: TillerClient, turn: str) -> tuple[float, float, str]:
    """(ms until the interrupt's answer, ms until turnEnded, the outcome)."""
    sent = time.perf_counter()
    answered, answer = await client.request_timed("tiller/interrupt", {})
    if answer.get("turnId") != turn:
        raise RuntimeError(f"interrupt answered {answer!r} for turn {turn}")
    ended = await client.wait_event("turnEnded", turn, timeout=10)
    return (answered - sent) * 1000, (ended.at - sent) * 1000, str(ended.params["outcome"])


async def mid_stream(client: TillerClient, api: FakeMessagesAPI, i: int) -> tuple[float, float]:
    api.enqueue({"content": [text(f"Streaming answer number {i}, " * 20)], "hangAfterEvents": 4})
    turn = await client.prompt(f"stream {i}")
    await client.wait_event("textDelta", turn)
    answer_ms, ended_ms, outcome = await interrupt_and_time(client, turn)
    if outcome != "interrupted":
        raise RuntimeError(f"mid-stream turn ended {outcome}")
    await api.wait_disconnects(i + 1, timeout=5)  # the stream was closed before the next one
    return answer_ms, ended_ms


async def mid_bash(client: TillerClient, api: FakeMessagesAPI, i: int) -> tuple[float, float]:
    api.enqueue({"content": [tool_use("bash", f"bash_{i}", command="sleep 30")]})
    turn = await client.prompt(f"bash {i}")
    await client.wait_event("toolStarted", turn)
    await asyncio.sleep(BASH_SETTLE_SECONDS)
    answer_ms, ended_ms, outcome = await interrupt_and_time(client, turn)
    if client.asked:
        raise RuntimeError(f"`sleep 30` asked for confirmation: {client.asked[-1].params}")
    finished = client.events("toolFinished", turn)
    if outcome != "interrupted" or not finished or finished[0].params["status"] != "interrupted":
        raise RuntimeError(f"mid-bash turn ended {outcome}, tool {finished}")
    return answer_ms, ended_ms


async def during_warm_up(i: int) -> tuple[float, float]:
    async with scratch() as s, FakeMessagesAPI(api_key=API_KEY) as api:
        client = await TillerClient.start(
            s.workspace, s.data_dir, fake_options(api, s.data_dir), s.stderr
        )
        try:
            # The SDK now loads within about a second of `initialized`: interrupt early, and
            # let the answer hang so the turn is still running if it has loaded already.
            api.enqueue({"content": [{"type": "text", "text": "slow"}], "hangAfterEvents": 3})
            turn = await client.prompt("hello, right away")
            await asyncio.sleep(0.02 + 0.08 * i)
            if client.events("turnEnded", turn):
                raise RuntimeError("the turn ended before the interrupt: nothing measured")
            answer_ms, ended_ms, outcome = await interrupt_and_time(client, turn)
            if outcome != "interrupted":
                raise RuntimeError(f"warm-up turn ended {outcome}")
            return answer_ms, ended_ms
        except Exception:
            print(stderr_tail(s.stderr))
            raise
        finally:
            await client.close()


def figures_of(label: str, answers: list[float], ended: list[float]) -> list[Figure]:
    note = f"N={len(ended)}"
    print(f"  {label} samples (ms): {' '.join(f'{v:.1f}' for v in ended)}")
    return [
        Figure(f"interrupt {label} p50", percentile(ended, 50), "ms", note=note),
        Figure(f"interrupt {label} p95", percentile(ended, 95), "ms", TARGET_MS, note=note),
        Figure(f"interrupt {label} max", max(ended), "ms", note=note),
        Figure(
            f"interrupt {label}: answer to tiller/interrupt p95",
            percentile(answers, 95),
            "ms",
            note=note,
        ),
    ]


async def measure() -> list[Figure]:
    async with scratch() as s, FakeMessagesAPI(api_key=API_KEY) as api:
        client = await TillerClient.start(
            s.workspace, s.data_dir, fake_options(api, s.data_dir), s.stderr
        )
        try:
            warm = await client.run("warm up")
            if warm.params["outcome"] != "completed":
                raise RuntimeError(f"warm-up turn: {warm.params}")
            results: list[Figure] = []
            for label, one in (("mid-stream", mid_stream), ("mid-bash", mid_bash)):
                answers: list[float] = []
                ended: list[float] = []
                for i in range(N):
                    answer_ms, ended_ms = await one(client, api, i)
                    answers.append(answer_ms)
                    ended.append(ended_ms)
                results += figures_of(label, answers, ended)
            await asyncio.sleep(0.2)
            left = [c for c in children(client.pid) if c[1] in ("sleep", "bash")]
            results.append(
                Figure("mid-bash: sleep/bash processes left under the server", len(left), "")
            )
        except Exception:
            print(stderr_tail(s.stderr))
            raise
        finally:
            await client.close()
    warm_up = [await during_warm_up(i) for i in range(N_WARMUP)]
    answers = [a for a, _ in warm_up]
    results += figures_of("during SDK warm-up", answers, [e for _, e in warm_up])
    return results


if __name__ == "__main__":
    main("interrupt latency", measure)
