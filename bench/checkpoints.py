"""Checkpoint cost on a generated workspace of 10,000 files / 200 MB (issue: rewind).

Measures, on the shadow repository directly (the server runs the same code in a worker
thread): the first snapshot, an incremental snapshot after a 3-file change (target <= 150 ms),
a restore of those 3 files, the shadow repository's disk size after 100 turns that each
touch 3 files (a snapshot before and after each turn), before and after the background pack,
and what housekeeping costs at a server start when it has nothing to collect.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import Figure, main, median
from tiller.workspace.checkpoints.shadow_repo import ShadowRepo

FILES = 10_000
TOTAL_BYTES = 200 * 1024 * 1024
TURNS = 100


def generate(root: Path) -> list[Path]:
    rng = random.Random(7)
    size = TOTAL_BYTES // FILES
    paths = []
    for n in range(FILES):
        folder = root / f"pkg{n % 100:02}" / f"mod{n % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"file{n:05}.txt"
        path.write_bytes(rng.randbytes(size))
        paths.append(path)
    return paths


def cpu_ms(work: Callable[[], object]) -> float:
    """CPU time of ``work`` in this process and the children it waited for (git), in ms."""
    before = os.times()
    work()
    after = os.times()
    spent = (after.user + after.system + after.children_user + after.children_system) - (
        before.user + before.system + before.children_user + before.children_system
    )
    return spent * 1000


def disk_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


async def measure() -> list[Figure]:
    scratch = Path(tempfile.mkdtemp(prefix="tiller-bench-ckpt-"))
    try:
        ws = scratch / "ws"
        paths = generate(ws)
        repo = ShadowRepo(scratch / "shadow.git", ws)
        started = time.perf_counter()
        first = repo.snapshot("first")
        first_s = time.perf_counter() - started
        rng = random.Random(1)
        incremental: list[float] = []
        restores: list[float] = []
        for _ in range(5):
            for path in rng.sample(paths, 3):
                path.write_bytes(os.urandom(512))
            started = time.perf_counter()
            repo.snapshot("after 3 changes")
            incremental.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            repo.restore(first.commit)
            restores.append((time.perf_counter() - started) * 1000)
            repo.snapshot("settle")  # restored files have new stats
        base = disk_mib(repo.git_dir)
        kept: list[str] = []
        for turn in range(TURNS):
            kept.append(repo.snapshot(f"before {turn}").commit)
            for path in rng.sample(paths, 3):
                path.write_bytes(os.urandom(2048))
            kept.append(repo.snapshot(f"after {turn}").commit)
        grown = disk_mib(repo.git_dir) - base
        started = time.perf_counter()
        repo.keep_alive([])
        repo.gc()
        gc_s = time.perf_counter() - started
        packed = disk_mib(repo.git_dir)
        repo.collect(kept)  # the turns' checkpoints kept: packed now, nothing let go
        housekeeping = cpu_ms(lambda: repo.collect(kept))
        full_gc = cpu_ms(repo.gc)  # what every server start ran before
        return [
            Figure("first snapshot, 10,000 files / 200 MB", first_s, "s"),
            Figure("incremental snapshot, 3 files changed", median(incremental), "ms", 150, "<="),
            Figure("restore of 3 changed files (with its snapshot)", median(restores), "ms"),
            Figure(f"disk growth over {TURNS} turns x 3 files, loose", grown, "MiB"),
            Figure("shadow repository after the background pack", packed, "MiB",
                   note=f"gc took {gc_s:.1f} s; the workspace itself is 200 MiB"),
            Figure("housekeeping at a server start, nothing to collect (CPU, git's included)",
                   housekeeping, "ms", note=f"a full gc, run there before: {full_gc:.0f} ms"),
        ]  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main("Checkpoints: snapshot, restore and disk cost", measure)
