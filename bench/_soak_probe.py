"""``python bench/_soak_probe.py [--acp]``: ``python -m tiller [--acp]`` with a memory probe.

``soak.py --probe DIR`` starts the server this way. A daemon thread appends to the file named
by ``TILLER_SOAK_PROBE``:

- every ``TILLER_SOAK_PROBE_MALLOC`` seconds (default 10) two lines: glibc's totals over
  every arena (``mallinfo2``: what malloc holds from the system, in use, free), the threads,
  ``VmRSS`` / ``RssAnon``, and pymalloc's arenas and blocks; so native growth (malloc's free
  chunks, arenas) can be told from Python objects;
- at each look: those lines, and once ``TILLER_SOAK_PROBE_WARMUP`` seconds (default 60) have
  passed, the first look starts tracemalloc (``TILLER_SOAK_PROBE_FRAMES`` frames, default 12;
  0: none), the second takes a baseline (objects by type, ``gc.get_objects``, and a
  tracemalloc snapshot), each later one writes what grew since: the types whose count grew
  most and the allocation sites whose live size grew most. A look comes when the bench asks
  for one (it creates the file ``TILLER_SOAK_PROBE_TRIGGER`` names, which the probe deletes
  when it is done: ``soak.py`` asks, with the server idle, after each turn that compacted, so
  the looks compare the same moment of the history's cycle), else every
  ``TILLER_SOAK_PROBE_EVERY`` seconds (default 60). Tracing starts late on purpose: tracing
  the imports makes the start take minutes, and only what grows after the warm-up matters.

Nothing here changes what the server does; it only costs time and memory.
"""

from __future__ import annotations

import ctypes
import gc
import os
import re
import runpy
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOP = 25
IGNORED = (
    tracemalloc.__file__,
    __file__,
    "*/linecache.py",
    "<frozen importlib._bootstrap>",
    "<frozen importlib._bootstrap_external>",
)


class MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
            "fordblks", "keepcost",
        )
    ]  # fmt: skip


def malloc_line(started: float) -> str:
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    info = libc.mallinfo2()
    mib = 2**20
    status = Path("/proc/self/status").read_text().splitlines()
    rss = " ".join(
        " ".join(line.split()) for line in status if line.startswith(("VmRSS", "RssAnon"))
    )
    return (
        f"{time.monotonic() - started:6.0f} s  malloc heap {info.arena / mib:.1f} MiB (in use "
        f"{info.uordblks / mib:.1f}, free {info.fordblks / mib:.1f} in {info.ordblks} chunks), "
        f"mmapped {info.hblkhd / mib:.1f} MiB in {info.hblks}; threads "
        f"{threading.active_count()}; {rss}"
    )


def pymalloc_line() -> str:
    """pymalloc's arenas (``sys._debugmallocstats``, which writes to fd 2: borrowed for it)."""
    with tempfile.TemporaryFile() as sink:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        text = sink.read().decode(errors="replace")
    found = dict(
        re.findall(
            r"# (arenas allocated current|bytes in (?:allocated|available) blocks) *= *([\d,]+)",
            text,
        )
    )
    number = {k: int(v.replace(",", "")) for k, v in found.items()}
    mib = 2**20
    return (
        f"        pymalloc arenas {number.get('arenas allocated current', 0)} "
        f"(blocks in use {number.get('bytes in allocated blocks', 0) / mib:.1f} MiB, "
        f"free {number.get('bytes in available blocks', 0) / mib:.1f})"
    )


def sdk_caches_line() -> str:
    """The SDK's unbounded caches (``anthropic._models``), when it is loaded."""
    models = sys.modules.get("anthropic._models")
    if models is None:
        return "        anthropic not loaded"
    info = models._CachedTypeAdapter.cache_info()
    return (
        f"        anthropic type adapters: {info.currsize} (hits {info.hits}, misses "
        f"{info.misses}); discriminators {len(models.DISCRIMINATOR_CACHE)}"
    )


STACKS: Counter[str] = Counter()


def watch_schema_builds() -> None:
    """Count, by the stack that asked, every pydantic schema built after start (a
    ``TypeAdapter``, a model's rebuild): a cache that misses shows as a stack that keeps
    counting (``TILLER_SOAK_PROBE_STACKS=1``)."""
    import traceback

    from pydantic import BaseModel, TypeAdapter

    def counted(original: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            frames = traceback.extract_stack(limit=14)[:-1]
            STACKS["".join(traceback.format_list(frames))] += 1
            return original(*args, **kwargs)

        return wrapper

    TypeAdapter._init_core_attrs = counted(TypeAdapter._init_core_attrs)  # type: ignore[method-assign]
    rebuild = BaseModel.model_rebuild.__func__  # type: ignore[attr-defined]
    BaseModel.model_rebuild = classmethod(counted(rebuild))  # type: ignore[assignment,method-assign]


def stacks_lines() -> list[str]:
    lines = [f"--- schema builds: {sum(STACKS.values())}"]
    for stack, n in STACKS.most_common(5):
        lines += [f"  {n} times from:", stack]
    return lines


def type_counts() -> Counter[str]:
    counts: Counter[str] = Counter()
    for obj in gc.get_objects():
        kind = type(obj)
        counts[f"{kind.__module__}.{kind.__qualname__}"] += 1
    return counts


def snapshot() -> tracemalloc.Snapshot | None:
    if not tracemalloc.is_tracing():
        return None
    return tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, name, all_frames=True) for name in IGNORED]
    )


@dataclass(frozen=True)
class Baseline:
    started: float
    types: Counter[str]
    traces: tracemalloc.Snapshot | None


def growth(base: Baseline) -> list[str]:
    types = type_counts()
    grown = Counter({k: n - base.types.get(k, 0) for k, n in types.items()})
    traced = tracemalloc.get_traced_memory()[0] / 2**20
    lines = [
        f"=== {time.monotonic() - base.started:.0f} s after start; traced {traced:.1f} MiB, "
        f"{sum(types.values())} objects (not counting those gc.freeze() froze), "
        f"gc.garbage {len(gc.garbage)}",
        "--- object counts grown since the baseline",
        *(f"{n:+8d}  {name}" for name, n in grown.most_common(TOP) if n > 0),
    ]
    now = snapshot()
    if now is None or base.traces is None:
        return lines
    lines.append("--- allocation sites grown since the baseline (live size)")
    for stat in now.compare_to(base.traces, "traceback")[:TOP]:
        if stat.size_diff <= 0:
            continue
        lines.append(
            f"{stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+7d} blocks "
            f"(now {stat.size / 1024:.1f} KiB in {stat.count})"
        )
        lines += [f"      {line}" for line in stat.traceback.format(most_recent_first=True)]
    return lines


@dataclass
class Reports:
    """When to look: on a schedule, or when the bench asks (a trigger file) at comparable
    moments. The first look after the warm-up starts tracemalloc, the second takes the
    baseline (so what was alive then was allocated while tracing: a history rebuilt since does
    not count as growth), each later one reports the growth. Mutable."""

    out: Path
    started: float
    warmup: float
    frames: int
    base: Baseline | None = None
    looks: int = 0

    def look(self, why: str) -> None:
        lines = [f"{malloc_line(self.started)}  [{why}]", pymalloc_line(), sdk_caches_line()]
        if STACKS:
            lines += stacks_lines()
        if time.monotonic() - self.started >= self.warmup:
            gc.collect()
            self.looks += 1
            if self.looks == 1 and self.frames > 0:
                tracemalloc.start(self.frames)
                lines.append("=== tracing started")
            elif self.base is None:
                self.base = Baseline(self.started, type_counts(), snapshot())
                lines.append("=== baseline taken")
            else:
                lines += growth(self.base)
        with self.out.open("a", encoding="utf-8") as sink:
            sink.write("\n".join(lines) + "\n")


def probe(out: Path) -> None:
    reports = Reports(
        out,
        time.monotonic(),
        warmup=float(os.environ.get("TILLER_SOAK_PROBE_WARMUP", "60")),
        frames=int(os.environ.get("TILLER_SOAK_PROBE_FRAMES", "12")),
    )
    every = float(os.environ.get("TILLER_SOAK_PROBE_EVERY", "60"))
    tick = float(os.environ.get("TILLER_SOAK_PROBE_MALLOC", "10"))
    trigger = os.environ.get("TILLER_SOAK_PROBE_TRIGGER")
    next_tick = next_report = reports.started + tick
    while True:
        time.sleep(0.2)
        now = time.monotonic()
        if trigger is not None and os.path.exists(trigger):
            reports.look("asked")
            os.unlink(trigger)
        elif trigger is None and now >= next_report:
            next_report = now + every
            reports.look("scheduled")
        elif now >= next_tick:
            next_tick = now + tick
            with out.open("a", encoding="utf-8") as sink:
                sink.write(f"{malloc_line(reports.started)}\n{pymalloc_line()}\n")


def main() -> None:
    out = Path(os.environ["TILLER_SOAK_PROBE"])
    if os.environ.get("TILLER_SOAK_PROBE_STACKS"):
        watch_schema_builds()
    threading.Thread(target=probe, args=(out,), daemon=True, name="soak-probe").start()
    sys.argv = ["tiller", *sys.argv[1:]]
    runpy.run_module("tiller", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
