"""Cost of splitting a command line into segments: before (bashlex, the splitter of commit
944970d, read from git) and after (tree-sitter-bash, ``bash_segments.split_command``, with
its readings and code strings).

Prints figures (median of N runs, in-process, after one warm-up call): a typical compound
command; a here-document with a substitution; 4 KB and 16 KB pipelines (16 KB is the largest
size that is split); a 16 KB command of one program with many words; and the parser's first
call in a process (tree-sitter's language load). Not a test: nothing fails on a slow number.
"""

from __future__ import annotations

import functools
import importlib.util
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

from tiller.workspace.bash.segments import MAX_SEGMENTED_BYTES, split_command

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "944970d"  # the last commit with the bashlex splitter
BEFORE_PATH = "server/tiller/workspace/bash/segments.py"


def median_ms(action: Callable[[], object], runs: int = 15) -> float:
    action()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def pipeline(size: int) -> str:
    unit = "git diff a.txt | "
    return (unit * (size // len(unit)))[: size - 6].rsplit("|", 1)[0] + "| wc -l"


def one_command(size: int) -> str:
    return ("echo" + " word" * (size // 5))[: size - 1]


def old_splitter() -> Callable[[str], object] | None:
    """The bashlex splitter as it was, or None outside a git checkout of this repository."""
    shown = subprocess.run(
        ["git", "show", f"{BEFORE}:{BEFORE_PATH}"], cwd=ROOT, capture_output=True, text=True
    )
    if shown.returncode != 0:
        return None
    spec = importlib.util.spec_from_loader("old_bash_segments", loader=None)
    assert spec is not None
    module = types.ModuleType(spec.name)
    sys.modules[spec.name] = module  # dataclasses look their module up
    exec(compile(shown.stdout, BEFORE_PATH, "exec"), module.__dict__)
    split: Callable[[str], object] = module.split_segments
    return split


def main() -> None:
    lines = {
        "typical compound": "git status && git diff | grep x; ls -la src",
        "here-document": "git diff <<EOF\n$(date)\nEOF",
        "4 KB pipeline": pipeline(4096),
        "16 KB pipeline": pipeline(MAX_SEGMENTED_BYTES),
        "16 KB one command": one_command(MAX_SEGMENTED_BYTES),
    }
    started = time.perf_counter()
    split_command("true")
    print(f"tree-sitter first call (language load): {(time.perf_counter() - started) * 1e3:.2f} ms")
    before = old_splitter()
    print(f"{'line':20s} {'before (bashlex)':>18s} {'after (tree-sitter)':>20s}")
    for name, line in lines.items():
        runs = 5 if len(line) > 4096 else 15
        after = median_ms(functools.partial(split_command, line), runs)
        old = (
            "n/a"
            if before is None
            else f"{median_ms(functools.partial(before, line), runs):.2f} ms"
        )
        print(f"{name:20s} {old:>18s} {after:17.2f} ms")


if __name__ == "__main__":
    main()
