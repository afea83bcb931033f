"""Shared bits of the benches: figures and their targets, percentiles, the fake API setup.

Every bench script prints lines like::

    interrupt mid-stream p95: 12.3 ms (target < 100 ms, ratio 0.12)

and, given ``--json PATH``, also writes its figures there (``run_all.py`` collects them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp.schema import RequestPermissionResponse

ROOT = Path(__file__).resolve().parents[1]
TESTS = str(ROOT / "tests")
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)  # for ``fakeapi`` (stdlib only), as the tests import it

from fakeapi import FakeMessagesAPI as FakeMessagesAPI  # noqa: E402  (re-exported)

JSON = dict[str, Any]
API_KEY = "bench-key"
MODEL = "claude-bench-1"


@dataclass(frozen=True)
class Figure:
    """One measured value; ``target`` is an upper bound (``<`` or ``<=``) or None."""

    name: str
    value: float
    unit: str
    target: float | None = None
    op: str = "<"
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.target is None or self.target == 0:
            return None
        return self.value / self.target

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        return self.value < self.target if self.op == "<" else self.value <= self.target

    def line(self) -> str:
        text = f"{self.name}: {fmt(self.value)} {self.unit}".rstrip()
        if self.target is not None:
            unit = f" {self.unit}" if self.unit else ""
            text += f" (target {self.op} {fmt(self.target)}{unit}, ratio {self.ratio:.2f})"
        if self.note:
            text += f"  [{self.note}]"
        return text


def fmt(value: float) -> str:
    if value == 0 or abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3f}"


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (p95 of 20 samples is the 19th smallest)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def machine_note() -> str:
    load = os.getloadavg()
    return (
        f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
        f"Python {platform.python_version()}"
    )


def text(value: str) -> JSON:
    return {"type": "text", "text": value}


def tool_use(name: str, tool_id: str, **tool_input: object) -> JSON:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def fake_options(api: FakeMessagesAPI, data_dir: Path, **more: Any) -> JSON:
    """initializationOptions pointing the server at the fake API."""
    options: JSON = {
        "provider": {"kind": "anthropic", "baseUrl": api.base_url, "apiKey": API_KEY},
        "model": MODEL,
        "dataDir": str(data_dir),
        "toolBudget": 0,
    }
    options.update(more)
    return options


@dataclass(frozen=True)
class Scratch:
    root: Path
    workspace: Path
    data_dir: Path
    stderr: Path


@asynccontextmanager
async def scratch() -> AsyncIterator[Scratch]:
    """A temporary workspace, data dir and a file for the server's stderr."""
    with tempfile.TemporaryDirectory(prefix="tiller-bench-") as raw:
        root = Path(raw)
        workspace = root / "ws"
        workspace.mkdir()
        yield Scratch(root, workspace, root / "data", root / "server-stderr.log")


def stderr_tail(path: Path, lines: int = 20) -> str:
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def main(title: str, measure: Callable[[], Coroutine[Any, Any, list[Figure]]]) -> None:
    """Parse ``--json PATH``, run ``measure``, print the figures (and write them)."""
    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    print(f"== {title}  ({machine_note()})", flush=True)
    figures = asyncio.run(measure())
    for figure in figures:
        print(figure.line(), flush=True)
    if args.json:
        args.json.write_text(json.dumps([asdict(f) for f in figures], indent=1))


def tool_results_in(body: JSON) -> int:
    """How many tool results a Messages request carries (how far a scripted turn has got)."""
    return sum(
        1
        for message in body.get("messages", [])
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )


def allowed_once(options: Sequence[Any]) -> RequestPermissionResponse:
    """An ACP client's answer to ``session/request_permission``: the offered "allow once"
    (``acp`` imported here, on the first question: a bench that never asks never loads it)."""
    from acp.schema import AllowedOutcome, RequestPermissionResponse

    allow = next(o.option_id for o in options if o.kind == "allow_once")
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=allow))
