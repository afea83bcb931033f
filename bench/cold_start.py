"""Cold start: spawning `python -m tiller` -> the `initialize` result arriving, N=10.

Raw asyncio subprocess with LSP framing (no pytest-lsp), the venv's python (sys.executable),
options pointing at the fake API. Target: median and p95 < 500 ms.

For context it also times spawn -> `turnEnded` of a first one-line turn on 2 starts (this
includes the lazy import of the anthropic SDK, which starts in a worker thread on
`initialized`), `shutdown` + `exit` -> process gone on 2 starts (sent right after
`initialized`, while that import still runs), the bare interpreter (`python -c pass`) and
`python -c "import lsprotocol.types"` (pygls imports it; any pygls server pays it).
The other starts are killed right after `initialize` (the figure is taken by then).
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
    median,
    percentile,
    scratch,
    stderr_tail,
)
from _lsp import SERVER_COMMAND, TillerClient

N = 10
FIRST_TURN_N = 2
EXIT_N = 2
TARGET_MS = 500.0


async def python_ms(code: str) -> float:
    """Wall time of ``python -c code`` with the venv's interpreter."""
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(SERVER_COMMAND[0], "-c", code)
    await process.wait()
    return (time.perf_counter() - started) * 1000


async def measure() -> list[Figure]:
    init_ms: list[float] = []
    first_turn_ms: list[float] = []
    exit_ms: list[float] = []
    async with scratch() as s, FakeMessagesAPI(api_key=API_KEY) as api:
        options = fake_options(api, s.data_dir)
        for _ in range(N):
            client = await TillerClient.spawn(s.data_dir, s.stderr)
            try:
                at, result = await client.initialize(s.workspace, options)
                if "capabilities" not in result:
                    raise RuntimeError(f"initialize answered {result!r}")
                init_ms.append((at - client.spawned_at) * 1000)
                client.notify("initialized", {})
                if len(first_turn_ms) < FIRST_TURN_N:
                    ended = await client.run("hello")
                    if ended.params["outcome"] != "completed":
                        raise RuntimeError(f"first turn: {ended.params}")
                    first_turn_ms.append((ended.at - client.spawned_at) * 1000)
                elif len(exit_ms) < EXIT_N:
                    await client.request("tiller/getState")
                    closing = time.perf_counter()
                    await client.close()
                    exit_ms.append((time.perf_counter() - closing) * 1000)
                else:
                    client.process.kill()
                    await client.process.wait()
            except Exception:
                print(stderr_tail(s.stderr))
                raise
            finally:
                await client.close()
    bare = [await python_ms("pass") for _ in range(N)]
    lsprotocol = [await python_ms("import lsprotocol.types") for _ in range(5)]
    print(f"  spawn -> initialize result (ms): {' '.join(f'{v:.0f}' for v in init_ms)}")
    print(f"  spawn -> first turnEnded (ms): {' '.join(f'{v:.0f}' for v in first_turn_ms)}")
    print(f"  shutdown+exit right after start (ms): {' '.join(f'{v:.0f}' for v in exit_ms)}")
    note = f"N={N}"
    return [
        Figure(
            "cold start median (spawn -> initialize result)",
            median(init_ms),
            "ms",
            TARGET_MS,
            note=note,
        ),
        Figure(
            "cold start p95 (spawn -> initialize result)",
            percentile(init_ms, 95),
            "ms",
            TARGET_MS,
            note=note,
        ),
        Figure(
            "spawn -> first completed turn, median",
            median(first_turn_ms),
            "ms",
            note="incl. SDK import",
        ),
        Figure(
            "shutdown+exit right after start -> process gone, median",
            median(exit_ms),
            "ms",
            note="waits for the SDK import thread",
        ),
        Figure("bare `python -c pass`, median", median(bare), "ms", note="interpreter floor"),
        Figure(
            "`python -c 'import lsprotocol.types'`, median",
            median(lsprotocol),
            "ms",
            note="N=5, pygls's floor",
        ),
    ]


if __name__ == "__main__":
    main("cold start", measure)
