"""`tiller/getState` latency while the server is under load, on the client (sent -> answer read).

(a) big tool input: the fake API streams a ``write_file`` call whose input is 512 KiB, in
    small ``input_json_delta`` events (``--delta`` bytes each, no delay between events);
    meanwhile the client sends a `getState` every 10 ms (open loop: on schedule, whether or
    not the previous one was answered, so a blocked event loop shows in every late sample).
    Samples run from the prompt to ``toolStarted`` (the input has streamed completely).
(b) request flood: `getState` at ``--rate`` requests/s (default 1,000) for ``--seconds``
    (default 3) on an idle server, open loop, every request timed; plus the rate achieved.

The fake API runs in a process of its own (``tests/fakeapi.py --script``): in this process
its unthrottled SSE writer would block the client's event loop too, and the client's delay
would be counted as the server's.

Target (issue 7, item 7): p99 < 50 ms in both.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from _common import (
    API_KEY,
    JSON,
    MODEL,
    ROOT,
    Figure,
    main,
    median,
    percentile,
    scratch,
    stderr_tail,
    text,
    tool_use,
)
from _lsp import Received, TillerClient

TARGET_MS = 50.0
INPUT_BYTES = 512 * 1024
PROBE_EVERY = 0.010

parser = argparse.ArgumentParser(add_help=False)
parser.add_argument("--delta", type=int, default=64, help="bytes per input_json_delta (a)")
parser.add_argument("--rounds", type=int, default=5, help="big-input turns (a)")
parser.add_argument("--rate", type=int, default=1000, help="requests per second (b)")
parser.add_argument("--seconds", type=float, default=3.0, help="length of the flood (b)")
OPTIONS, _rest = parser.parse_known_args()
sys.argv = [sys.argv[0], *_rest]


def content_of(size: int) -> str:
    line = "0123456789 the quick brown fox jumps over the lazy dog, again and again.\n"
    return (line * (size // len(line) + 1))[:size]


async def timed_get_state(client: TillerClient, samples: list[float]) -> None:
    sent = time.perf_counter()
    answered, state = await client.request_timed("tiller/getState", {}, timeout=120)
    if "sessionId" not in state:
        raise RuntimeError(f"getState answered {state!r}")
    samples.append((answered - sent) * 1000)


async def probe_until(
    client: TillerClient, done: asyncio.Event, every: float, samples: list[float]
) -> int:
    """Send a timed getState every ``every`` s until ``done``; how many were sent."""
    tasks: list[asyncio.Task[None]] = []
    start = time.perf_counter()
    while not done.is_set():
        tasks.append(asyncio.create_task(timed_get_state(client, samples)))
        next_at = start + len(tasks) * every
        delay = max(0.0, next_at - time.perf_counter())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), delay)
    await asyncio.gather(*tasks)
    return len(tasks)


def figures_of(label: str, samples: list[float], note: str) -> list[Figure]:
    return [
        Figure(f"getState {label} p50", percentile(samples, 50), "ms", note=note),
        Figure(f"getState {label} p99", percentile(samples, 99), "ms", TARGET_MS, note=note),
        Figure(f"getState {label} max", max(samples), "ms", note=note),
    ]


def script(content: str) -> JSON:
    """The fake API's responses: a warm-up answer, then per round a big write and an answer."""
    responses: list[JSON] = [{"content": [text("warm")]}]
    for i in range(OPTIONS.rounds):
        big = tool_use("write_file", f"big_{i}", path=f"big{i}.txt", content=content)
        responses.append({"content": [big], "inputJsonChunk": OPTIONS.delta})
        responses.append({"content": [text("written")]})
    return {"responses": responses, "apiKey": API_KEY}


@asynccontextmanager
async def standalone_fake_api(root: Path, content: str) -> AsyncIterator[str]:
    """``tests/fakeapi.py`` in its own process; yields its base URL."""
    script_path, port_path = root / "fake-script.json", root / "fake-port"
    script_path.write_text(json.dumps(script(content)))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "tests" / "fakeapi.py"),
        "--script",
        str(script_path),
        "--port-file",
        str(port_path),
    )
    try:
        async with asyncio.timeout(30):
            while not (port_path.exists() and port_path.read_text().strip()):
                if process.returncode is not None:
                    raise RuntimeError(f"fake API exited ({process.returncode})")
                await asyncio.sleep(0.05)
        yield f"http://127.0.0.1:{int(port_path.read_text())}"
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()


async def tool_started_or_turn_ended(client: TillerClient, turn: str) -> Received:
    def first() -> Received | None:
        found = client.events("toolStarted", turn) or client.events("turnEnded", turn)
        return found[0] if found else None

    return await client.wait_for(first, timeout=600)


async def big_tool_input(client: TillerClient, workspace: Path) -> list[Figure]:
    samples: list[float] = []
    stream_seconds: list[float] = []
    for i in range(OPTIONS.rounds):
        # A fresh session each time: the history would otherwise grow by 512 KiB per round
        # and compaction would take the fake's next scripted response.
        await client.request("tiller/session/new", {})
        streamed = asyncio.Event()
        sent = time.perf_counter()
        turn = await client.prompt(f"write big file {i}")
        probing = asyncio.create_task(probe_until(client, streamed, PROBE_EVERY, samples))
        try:
            started = await tool_started_or_turn_ended(client, turn)
        finally:
            streamed.set()
            await probing
        if started.params["type"] != "toolStarted":
            raise RuntimeError(f"big-input turn ended before its tool ran: {started.params}")
        ended = await client.wait_event("turnEnded", turn, timeout=120)
        if ended.params["outcome"] != "completed":
            raise RuntimeError(f"big-input turn ended {ended.params}")
        if (workspace / f"big{i}.txt").stat().st_size != INPUT_BYTES:
            raise RuntimeError(f"big{i}.txt was not written whole")
        stream_seconds.append(started.at - sent)
    deltas = -(-INPUT_BYTES // OPTIONS.delta)
    note = f"N={len(samples)}, {OPTIONS.rounds} turns, {deltas}+ deltas of {OPTIONS.delta} B"
    print(f"  prompt -> toolStarted (s): {' '.join(f'{v:.2f}' for v in stream_seconds)}")
    return [
        Figure("512 KiB tool input: prompt -> toolStarted, median", median(stream_seconds), "s"),
        *figures_of("during 512 KiB tool input", samples, note),
    ]


async def flood(client: TillerClient) -> list[Figure]:
    samples: list[float] = []
    done = asyncio.Event()
    began = time.perf_counter()
    loop = asyncio.get_running_loop()
    loop.call_later(OPTIONS.seconds, done.set)
    count = await probe_until(client, done, 1 / OPTIONS.rate, samples)
    took = time.perf_counter() - began
    note = f"N={count} in {took:.1f} s"
    return [
        Figure(f"flood: requests/s sent and answered (asked {OPTIONS.rate})", count / took, "/s"),
        *figures_of(f"at {OPTIONS.rate}/s", samples, note),
    ]


async def measure() -> list[Figure]:
    async with scratch() as s, standalone_fake_api(s.root, content_of(INPUT_BYTES)) as url:
        options: JSON = {
            "provider": {"kind": "anthropic", "baseUrl": url, "apiKey": API_KEY},
            "model": MODEL,
            "dataDir": str(s.data_dir),
            "toolBudget": 0,
            "permissionMode": "acceptEdits",
        }
        client = await TillerClient.start(s.workspace, s.data_dir, options, s.stderr)
        try:
            warm = await client.run("warm up")
            if warm.params["outcome"] != "completed":
                raise RuntimeError(f"warm-up turn: {warm.params}")
            idle: list[float] = []
            for _ in range(50):
                await timed_get_state(client, idle)
            results = figures_of("idle, one at a time", idle, f"N={len(idle)}")[:1]
            results += await big_tool_input(client, s.workspace)
            results += await flood(client)
        except Exception:
            print(stderr_tail(s.stderr))
            raise
        finally:
            await client.close()
    return results


if __name__ == "__main__":
    main("getState latency under load", measure)
