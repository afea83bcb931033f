"""Run every bench (each in its own process, as it runs alone) and print one summary table.

    uv run python bench/run_all.py [--only NAME ...]

Each bench's own lines are shown as it runs; the table at the end lists every figure that has
a target: measured value, target, ratio measured/target (below 1 is better) and whether met.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, Figure, fmt, machine_note

BENCHES = (
    "interrupt_latency",
    "batch_parallel",
    "parallel_tasks",
    "step_overhead",
    "history_growth",
    "cold_start",
    "idle_rss",
    "getstate_latency",
    "cache_share",
    "acp_cancel_latency",
    "checkpoints",
    "mcp_prefix",
)


def git_revision() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "server")
    return git("rev-parse", "--short", "HEAD") + (" (server/ modified)" if dirty else "")


def run_bench(name: str, out: Path) -> tuple[list[Figure], float, int]:
    started = time.perf_counter()
    script = Path(__file__).with_name(f"{name}.py")
    code = subprocess.call([sys.executable, str(script), "--json", str(out)], cwd=ROOT)
    seconds = time.perf_counter() - started
    if code != 0 or not out.exists():
        return [], seconds, code
    return [Figure(**raw) for raw in json.loads(out.read_text())], seconds, code


def table(rows: list[tuple[str, Figure]]) -> str:
    header = ("bench", "figure", "measured", "target", "ratio", "met")
    lines = [header]
    for bench, f in rows:
        unit = f" {f.unit}" if f.unit else ""
        ratio = f"{f.ratio:.2f}" if f.ratio is not None else "-"
        target = f"{f.op} {fmt(f.target)}{unit}" if f.target is not None else "-"
        met = {True: "yes", False: "NO", None: "-"}[f.met]
        lines.append((bench, f.name, f"{fmt(f.value)}{unit}", target, ratio, met))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    rendered = [
        "  ".join(
            cell.ljust(w) if i < 2 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    ]
    rendered.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(rendered)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", choices=BENCHES, help="run only these benches")
    args = parser.parse_args()
    chosen = args.only or list(BENCHES)
    print(f"Tiller benches at {git_revision()}; {machine_note()}\n", flush=True)
    rows: list[tuple[str, Figure]] = []
    failed: list[str] = []
    total = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tiller-bench-all-") as tmp:
        for name in chosen:
            figures, seconds, code = run_bench(name, Path(tmp) / f"{name}.json")
            print(f"   ({name}: {seconds:.1f} s)\n", flush=True)
            if code != 0:
                failed.append(f"{name} (exit code {code})")
            rows += [(name, f) for f in figures if f.target is not None]
    print(f"== summary ({time.perf_counter() - total:.0f} s in all; {machine_note()})")
    print(table(rows))
    if failed:
        print(f"\nFAILED to run: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
