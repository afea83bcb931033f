"""Cost of judging a call against permission rules, on the worker thread that judges calls.

Prints figures (median of N runs, in-process): reading the rule files of every scope (six
files, 40 rules); splitting and judging a typical compound command (``git status && git diff |
grep x``) against them, with the per-segment read-only proof and without; 4 KB and 16 KB
pipelines (the largest size that is split). Not a test: nothing fails on a slow number.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tiller.core.permissions.call_rules import judge_command
from tiller.core.permissions.rule_files import load_rule_book
from tiller.extend.trust import Trust
from tiller.workspace.bash.readonly import is_read_only_command


def median_ms(action: Callable[[], object], runs: int = 15) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def pipeline(size: int) -> str:
    unit = "git diff a.txt | "
    return (unit * (size // len(unit)))[: size - 6].rsplit("|", 1)[0] + "| wc -l"


def write_rules(root: Path) -> None:
    rules = [f"Bash(tool{n} run:*)" for n in range(36)] + ["Bash(git status:*)", "Bash(git diff:*)"]
    for folder in (".claude", ".tiller"):
        for name in ("settings.json", "settings.local.json"):
            path = root / folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                json.dumps({"permissions": {"allow": rules[:7], "deny": ["Read(./.env)"]}})
            )
    (root / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": rules}}))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        os.environ["CLAUDE_CONFIG_DIR"] = str(ws / "user-claude")
        os.environ["TILLER_CONFIG_DIR"] = str(ws / "user-tiller")
        write_rules(ws)
        (ws / "a.txt").write_text("a\n")
        trusted = Trust(True, "the bench")
        book = load_rule_book(ws, trusted)
        print(f"rules read: {len(book.rules)} ({len(book.problems)} problems)")
        read = median_ms(lambda: load_rule_book(ws, trusted))
        print(f"read the rule files:            {read:7.2f} ms")
        typical = "git status && git diff | grep x"

        def never(_text: str) -> bool:
            return False

        def proof(text: str) -> bool:
            return is_read_only_command(text, ws)

        alone = median_ms(lambda: judge_command(typical, book, never))
        proved = median_ms(lambda: judge_command(typical, book, proof))
        print(f"typical compound, rules only:   {alone:7.2f} ms")
        print(f"typical compound, with proofs:  {proved:7.2f} ms")
        for size in (4096, 16384):
            cost = median_ms(functools.partial(judge_command, pipeline(size), book, never), runs=5)
            print(f"{size // 1024:2d} KB pipeline, rules only:     {cost:7.2f} ms")


if __name__ == "__main__":
    main()
