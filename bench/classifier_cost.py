"""Cost of the bash read-only classifier on the event loop thread, and of starting a command.

Prints figures (median of N runs, CPU-bound, in-process): a typical command; pipelines of
4 KB and 16 KB (the largest size that is parsed); a 126 KB pipeline (refused by its length);
a glob over a directory at the scan budget; the overhead of the supervisor and of bubblewrap
on ``true``. Not a test: nothing fails on a slow number.
"""

from __future__ import annotations

import asyncio
import functools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tiller.tools.bash_readonly import MAX_COMMAND_BYTES, is_read_only_command
from tiller.tools.sandbox import Confined, Unconfined, bwrap_works
from tiller.tools.shell import run_command


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


if __name__ == "__main__":
    main()
