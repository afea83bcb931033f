"""What a turn's checkpoint adds before its first tool, through the protocol (issue 23 item 4).

The real server over stdio, against the fake Messages API, on two generated git workspaces:
10,000 files (100 folders of 100, 2 KiB each, committed to the workspace's own git) and 3
files. On each, a warm-up turn takes the first (full) snapshot; then, ROUNDS times: 3 files
change, the user waits a moment (the previous turn's closing snapshot runs between turns, as
it does while a person reads the answer), and a turn starts whose first scripted response is
one ``write_file`` call (the first tool that may write waits for the snapshot and brings it
up to date; tools that only read never wait). Timed on the client: ``tiller/prompt`` sent ->
that call's ``toolStarted`` received. The figure is the median on 10,000 files minus the
median on 3 files (everything but the checkpoint is the same on both), alone and under load 3
(three busy-loop processes running for the whole measurement).

The snapshot alone, as ``checkpoints.py`` times it, leaves out what the protocol adds: the
snapshot shares the server's interpreter with the event loop that streams the model's answer,
and the first tool waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import (
    API_KEY,
    FakeMessagesAPI,
    Figure,
    fake_options,
    main,
    median,
    scratch,
    stderr_tail,
    tool_use,
)
from _common import text as text_block
from _lsp import TillerClient, initialize_params

BIG = 10_000
SMALL = 3
ROUNDS = 5
LOAD = 3
THINK_S = 1.0  # between turns: the previous turn's closing snapshot is done by then
JSON = dict[str, Any]


def generate(root: Path, files: int) -> list[Path]:
    """A git workspace of ``files`` files of 2 KiB, committed."""
    paths = []
    for n in range(files):
        folder = root / f"pkg{n % 100:02}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"file{n:05}.py"
        path.write_bytes(os.urandom(1024).hex().encode())
        paths.append(path)
    (root / "tiny.txt").write_text("tiny\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}  # fmt: skip
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "generated")):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)
    return paths


def first_tool(n: int) -> list[Any]:
    """A turn whose first tool writes (a tool that only reads never waits for the snapshot)."""
    call = tool_use("write_file", f"toolu_first_{n}", path=f"out{n}.txt", content="written\n")
    return [{"content": [call]}, {"content": [text_block("Wrote it.")]}]


async def first_tool_ms(files: int, rounds: int) -> list[float]:
    """``rounds`` turns on a fresh server over a workspace of ``files`` files: prompt sent ->
    the first tool's ``toolStarted``, in ms."""
    async with scratch() as s, FakeMessagesAPI(api_key=API_KEY) as api:
        paths = generate(s.workspace, files)
        options = fake_options(api, s.data_dir)
        client = await TillerClient.spawn(s.data_dir, s.stderr)
        params = initialize_params(s.workspace, options)
        await client.request_timed("initialize", params, timeout=300)  # slow under load
        client.notify("initialized", {})
        try:
            api.enqueue(*first_tool(-1))
            await client.run("warm up: the first snapshot", timeout=300)
            timings = []
            for n in range(rounds):
                for k in range(3):
                    changed = paths[(n * 7 + k * 331) % len(paths)]
                    changed.write_bytes(os.urandom(600).hex().encode())
                await asyncio.sleep(THINK_S)
                api.enqueue(*first_tool(n))
                sent = time.perf_counter()
                turn = await client.prompt(f"turn {n}")
                started = await client.wait_event("toolStarted", turn, 120)
                timings.append((started.at - sent) * 1000)
                await client.wait_event("turnEnded", turn, 120)
            return timings
        except Exception:
            print(stderr_tail(s.stderr))
            raise
        finally:
            await client.close()


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def load(processes: int) -> Iterator[None]:
    """``processes`` busy loops for the duration."""
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(processes)]
    for spinner in spinners:
        spinner.start()
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.terminate()
            spinner.join()


async def added_ms(rounds: int) -> tuple[float, float, float]:
    """(10,000-file median - 3-file median, the two medians), in ms."""
    bigs = await first_tool_ms(BIG, rounds)
    smalls = await first_tool_ms(SMALL, rounds)
    shown = " / ".join(", ".join(f"{t:.0f}" for t in ts) for ts in (bigs, smalls))
    print(f"  10,000 / 3 files: {shown} ms ({_load_note()})", flush=True)
    big, small = median(bigs), median(smalls)
    return big - small, big, small


def _load_note() -> str:
    return f"load average {os.getloadavg()[0]:.2f}"


async def measure() -> list[Figure]:
    alone, big, small = await added_ms(ROUNDS)
    alone_note = f"{big:.0f} - {small:.0f} ms, {_load_note()}"
    with load(LOAD):
        loaded, lbig, lsmall = await added_ms(ROUNDS)
        loaded_note = f"{lbig:.0f} - {lsmall:.0f} ms, {_load_note()} with the busy loops"
    return [
        Figure("checkpoint added before the first tool, 10,000 files, 3 changed", alone, "ms",
               100, "<=", alone_note),
        Figure(f"the same under load {LOAD}", loaded, "ms", 100, "<=", loaded_note),
    ]  # fmt: skip


if __name__ == "__main__":
    main("Checkpoint cost through the protocol: turn start -> first tool", measure)
