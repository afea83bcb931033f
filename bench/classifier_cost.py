"""Cost of the bash read-only classifier on the event loop thread, and of starting and
stopping a command.

Prints figures (median of N runs, CPU-bound, in-process): a typical command; pipelines of
4 KB and 16 KB (the largest size that is parsed); a 126 KB pipeline (refused by its length);
a glob over a directory at the scan budget; the overhead of the supervisor and of bubblewrap
on ``true``. Then how long stopping takes (the tests check only that it happens): a cancel
of ``sleep 30`` and of a command that ignores SIGTERM (the grace before SIGKILL), the end of
a command that leaves a background process holding its output, and a 0.5 s time limit.
Not a test: nothing fails on a slow number.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tiller.tools.live_output import LiveOutput
from tiller.tools.shell import run_command
from tiller.workspace.bash.readonly import MAX_COMMAND_BYTES, is_read_only_command
from tiller.workspace.sandbox import Confined, Unconfined, bwrap_works


def median_ms(action: Callable[[], object], runs: int = 7) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def pipeline(size: int) -> str:
    unit = "cat a.txt | "
    return (unit * (size // len(unit)))[: size - 6].rsplit("|", 1)[0] + "| wc -l"


async def command_ms(confinement: Confined | Unconfined, ws: Path, runs: int = 7) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        await run_command("true", ws, 30, confinement=confinement)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def on_output(event: asyncio.Event) -> Callable[[str], None]:
    """A live-output listener that sets ``event``: the command runs."""
    return lambda _text: event.set()


async def cancel_ms(command: str, ws: Path, runs: int = 5) -> float:
    """Cancel sent (once the command runs) -> the cancelled run returns, its processes
    stopped."""
    samples = []
    for _ in range(runs):
        up = asyncio.Event()
        live = LiveOutput(on_output(up))
        task = asyncio.create_task(run_command(f"echo up; {command}", ws, 60, live=live))
        await up.wait()
        sent = time.perf_counter()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        samples.append((time.perf_counter() - sent) * 1000)
    return statistics.median(samples)


async def run_ms(command: str, ws: Path, time_limit: float, runs: int = 5) -> float:
    """Start -> result of ``command``."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        await run_command(command, ws, time_limit)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def stopping(ws: Path) -> None:
    cases = {
        "cancel `sleep 30`": cancel_ms("sleep 30", ws),
        "cancel a command that ignores SIGTERM": cancel_ms("trap '' TERM; sleep 30 & wait", ws),
        "`sleep 30 & echo launched` (background holds the output)": run_ms(
            "sleep 30 & echo launched", ws, 60
        ),
        "`sleep 30` with a 0.5 s time limit": run_ms("sleep 30", ws, 0.5),
    }
    for name, measuring in cases.items():
        print(f"stop: {name}: {asyncio.run(measuring):.0f} ms")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        (ws / "a.txt").write_text("a\n")
        big = ws / "big"
        big.mkdir()
        for i in range(4_900):
            (big / f"f{i}").touch()
        cases = {
            "typical (git status && ls | wc -l)": "git status && ls | wc -l",
            "4 KB pipeline": pipeline(4 * 1024),
            f"{MAX_COMMAND_BYTES // 1024} KB pipeline (parsed)": pipeline(MAX_COMMAND_BYTES),
            "126 KB pipeline (refused by length)": pipeline(126 * 1024),
            "glob over 4,900 entries": "cat big/*",
        }
        for name, command in cases.items():
            verdict = is_read_only_command(command, ws)
            ms = median_ms(functools.partial(is_read_only_command, command, ws))
            print(f"classify {name}: {ms:.2f} ms (read-only: {verdict})")
        ms = asyncio.run(command_ms(Unconfined(), ws))
        print(f"run `true` unconfined (supervisor): {ms:.1f} ms")
        if bwrap_works():
            ms = asyncio.run(command_ms(Confined(writable=False), ws))
            print(f"run `true` in bwrap (supervisor + sandbox): {ms:.1f} ms")
        stopping(ws)


if __name__ == "__main__":
    main()
