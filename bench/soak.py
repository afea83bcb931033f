"""Soak: the server's resident memory over a long session, per face (issue 36).

Each face gets one server (``python -m tiller`` over the Tiller protocol, ``python -m tiller
--acp`` over ACP) on one session against the fake Messages API (in this process), and plays
turns back to back for ``--minutes`` each:

- a turn is a prompt ``soak turn N``, then three model responses: read-only tools in one
  batch (``read_file`` twice, ``grep``, ``list_files``), then ``bash`` ``ls`` (read-only, so
  sandboxed) with a ``write_file`` the client approves, then a final text;
- faults on a ``--fault-rate`` share of the model requests (seeded): 529 ``overloaded_error``
  and 500 ``api_error`` (the SDK retries them), a stream cut after three events, an ``error``
  event in the middle of the stream (the server retries the step); the first turn gets only
  529s, until it fails: the first error the SDK gives up on builds its error types' schemas
  (~3 MiB, ~130 ms, once), which would otherwise land at a random moment of the measure;
- nothing forces a compaction: the tools' output (~45 KB a turn, the ``grep`` capped at 30,000
  characters) fills the model's window (``claude-sonnet-4-5``, 200K tokens as the fake counts
  them: JSON characters / 4) in about fifteen turns, and the server compacts at ~80 % as it
  would in a real session. So the request bodies grow to ~650 KB and shrink again, over and
  over: what a long session's allocator sees.

A sampler reads ``VmRSS`` of the server process (``/proc/PID/status``) every
``--sample-seconds``. After the warm-up (``--warmup-turns``, default 300: the RSS climbs for
the first ~250 turns, whatever their pace, while the history goes through its first cycles;
``--warmup-minutes`` adds a time) the figures are the least-squares slope of RSS over time
(MiB/min) and over turns (MiB per 100 turns). A flat session has slopes near 0; the issue's
ACP server grew 1.37 MiB/min after 25 minutes.

``--probe DIR`` runs each server under ``_soak_probe.py``, which writes to ``DIR/<face>.txt``
glibc's heap (in use, free) and pymalloc's arenas every 10 s, and after the warm-up what grew
since: object counts by type and tracemalloc's allocation sites (its docstring has the knobs).
The probe slows the server (tracemalloc most): the slopes of a probed run are not the figures.

    nice -n 5 uv run --frozen python bench/soak.py --minutes 5
    nice -n 5 uv run --frozen python bench/soak.py --minutes 3 --faces acp --probe /tmp/probe
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.interfaces import Client
from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

from _common import (
    API_KEY,
    JSON,
    FakeMessagesAPI,
    Figure,
    Scratch,
    allowed_once,
    fake_options,
    fmt,
    machine_note,
    scratch,
    stderr_tail,
    text,
    tool_use,
)
from _lsp import SERVER_COMMAND, TillerClient, initialize_params, rss_kib

MODEL = "claude-sonnet-4-5"  # a 200K window the fake knows: compaction from ~160K
PROBE = Path(__file__).with_name("_soak_probe.py")
TURN = re.compile(r"soak turn (\d+)")
SUMMARY = "Earlier soak turns read files, listed them and wrote out/t*.txt; all went fine."
FILES = 12
FAULTS = ("overloaded 529", "api_error 500", "stream cut", "mid-stream error")


# --- the model --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """The fake's answers, decided from each request's body (so retries and failed turns need
    no bookkeeping): which turn the last prompt names, and how many steps it has had."""

    rng: random.Random
    fault_rate: float
    counts: Counter[str] = field(default_factory=Counter)

    def __call__(self, body: JSON) -> JSON:
        if "working memory" in str(body.get("system")):
            self.counts["compactions"] += 1
            return {"content": [text(SUMMARY)]}
        turn, step = position(body)
        answer = self.step(turn, step) if turn is not None and body.get("tools") else None
        if answer is None:
            return {"content": [text("Soak session")]}
        if turn == 0:  # the warm-up's: the SDK's first error it gives up on costs ~3 MiB once
            self.counts["warm-up 529"] += 1
            return faulty("overloaded 529", answer)
        if self.rng.random() < self.fault_rate:
            kind = self.rng.choice(FAULTS)
            self.counts[kind] += 1
            return faulty(kind, answer)
        return answer

    def step(self, turn: int, step: int) -> JSON | None:
        slot = turn % FILES
        match step:
            case 0:
                return {
                    "content": [
                        text(f"Looking at module {slot}."),
                        tool_use("read_file", f"r{turn}a", path=f"src/mod_{slot}.py"),
                        tool_use("read_file", f"r{turn}b", path=f"out/t{slot}.txt"),
                        tool_use("grep", f"g{turn}", pattern=r"def f_\d+", path="src"),
                        tool_use("list_files", f"l{turn}", path="src"),
                    ]
                }
            case 1:
                content = f"turn {turn}\n" + "".join(
                    f"line {i} of turn {turn}\n" for i in range(40)
                )
                return {
                    "content": [
                        tool_use("bash", f"b{turn}", command="ls -la src"),
                        tool_use(
                            "write_file", f"w{turn}", path=f"out/t{slot}.txt", content=content
                        ),
                    ]
                }
            case _:
                summary = " ".join(f"Point {i}: module {slot} is fine." for i in range(30))
                return {"content": [text(f"Done with turn {turn}. {summary}")]}


def position(body: JSON) -> tuple[int | None, int]:
    """The turn the last prompt names and how many model answers followed it."""
    messages = body.get("messages", [])
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
        named = [int(n) for t in texts for n in TURN.findall(t)]
        if named:
            steps = sum(1 for m in messages[index + 1 :] if m.get("role") == "assistant")
            return named[-1], steps
    return None, 0


def faulty(kind: str, answer: JSON) -> JSON:
    match kind:
        case "overloaded 529":
            error = {"status": 529, "message": "Overloaded", "retryAfter": "0"}
            return {"error": error}
        case "api_error 500":
            return {"error": {"status": 500, "message": "Internal error", "retryAfter": "0"}}
        case "stream cut":
            return {**answer, "dropAfterEvents": 3}
        case _:
            return {**answer, "midStreamError": {"afterEvents": 3}}


def seed_workspace(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "out").mkdir()
    for n in range(FILES):
        body = "".join(f"def f_{i}(x):\n    return x + {i}\n\n" for i in range(300))
        (workspace / "src" / f"mod_{n}.py").write_text(f'"""Module {n}."""\n\n{body}')


# --- sampling ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    seconds: float
    turns: int
    rss_mib: float


@dataclass
class Run:
    """What one face's soak saw (filled in as it goes)."""

    face: str
    started: float = field(default_factory=time.monotonic)
    turns: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    samples: list[Sample] = field(default_factory=list)

    def sample(self, pid: int) -> None:
        rss = rss_kib(pid)["VmRSS"] / 1024
        self.samples.append(Sample(time.monotonic() - self.started, self.turns, rss))


async def sampling(run: Run, pid: int, every: float) -> None:
    while True:
        run.sample(pid)
        await asyncio.sleep(every)


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y over x."""
    n = len(points)
    if n < 2:
        return float("nan")
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if spread == 0:
        return float("nan")
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


@dataclass(frozen=True)
class Warmup:
    """What the slopes leave out: the first ``turns`` turns and, if given, ``minutes``."""

    turns: int
    minutes: float = 0.0

    def over(self, turns: int, seconds: float) -> bool:
        return turns >= self.turns and seconds >= self.minutes * 60

    def words(self) -> str:
        minutes = f" and {fmt(self.minutes)} min" if self.minutes else ""
        return f"{self.turns} turns{minutes}"


def figures(run: Run, warmup: Warmup) -> list[Figure]:
    settled = [s for s in run.samples if warmup.over(s.turns, s.seconds)]
    if len(settled) < 2:
        print(f"  {run.face}: too short a run for slopes after a warm-up of {warmup.words()}")
    per_minute = slope([(s.seconds / 60, s.rss_mib) for s in settled])
    per_100 = slope([(s.turns / 100, s.rss_mib) for s in settled])
    first, last = run.samples[0], run.samples[-1]
    base = settled[0] if settled else last
    minutes = (last.seconds - base.seconds) / 60
    note = f"{len(settled)} samples over {minutes:.1f} min, {last.turns - base.turns} turns"
    return [
        Figure(f"{run.face} turns", run.turns, "", note=outcome_note(run.outcomes)),
        Figure(f"{run.face} RSS at the first sample", first.rss_mib, "MiB"),
        Figure(f"{run.face} RSS after warm-up", base.rss_mib, "MiB"),
        Figure(f"{run.face} RSS at the end", last.rss_mib, "MiB"),
        Figure(f"{run.face} RSS peak", max(s.rss_mib for s in run.samples), "MiB"),
        Figure(f"{run.face} RSS slope after warm-up", per_minute, "MiB/min", note=note),
        Figure(f"{run.face} RSS slope after warm-up, per 100 turns", per_100, "MiB"),
    ]


def outcome_note(outcomes: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))


# --- the faces --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Soak:
    minutes: float
    sample_seconds: float
    probe: Path | None
    model: Model
    warmup: Warmup

    def command(self, *args: str) -> tuple[str, ...]:
        if self.probe is None:
            return (*SERVER_COMMAND, *args)
        return (sys.executable, str(PROBE), *args)

    def probe_env(self, face: str) -> dict[str, str]:
        if self.probe is None:
            return {}
        self.probe.mkdir(parents=True, exist_ok=True)
        return {
            "TILLER_SOAK_PROBE": str(self.probe / f"{face}.txt"),
            "TILLER_SOAK_PROBE_WARMUP": "0",  # it looks when asked: after the warm-up
            "TILLER_SOAK_PROBE_TRIGGER": str(self.probe / f"{face}.look"),
        }

    async def look_if_compacted(self, run: Run, seen: int) -> int:
        """With the probe, after the warm-up: after a turn that compacted (the history at its
        smallest), the server idle, ask it for a look and wait until it is done. The
        compactions so far."""
        now = self.model.counts["compactions"]
        settled = self.warmup.over(run.turns, time.monotonic() - run.started)
        if self.probe is None or now == seen or not settled:
            return now
        face = run.face
        trigger = self.probe / f"{face}.look"
        trigger.touch()
        async with asyncio.timeout(600):
            while trigger.exists():  # noqa: ASYNC110  (another process deletes it)
                await asyncio.sleep(0.1)
        return now

    async def drive(self, run: Run, pid: int, one_turn: Callable[[int], Awaitable[str]]) -> None:
        sampler = asyncio.create_task(sampling(run, pid, self.sample_seconds))
        deadline = run.started + self.minutes * 60
        compactions = 0
        try:
            while time.monotonic() < deadline:
                outcome = await one_turn(run.turns)
                run.turns += 1
                run.outcomes[outcome] += 1
                compactions = await self.look_if_compacted(run, compactions)
        finally:
            sampler.cancel()
        run.sample(pid)


async def soak_lsp(soak: Soak, s: Scratch, api: FakeMessagesAPI) -> Run:
    options = fake_options(api, s.data_dir, model=MODEL)
    client = await TillerClient.spawn(s.data_dir, s.stderr, soak.command(), soak.probe_env("lsp"))
    params = initialize_params(s.workspace, options)
    await client.request_timed("initialize", params, timeout=300)  # slow under --probe
    client.notify("initialized", {})
    run = Run("lsp")

    async def one_turn(n: int) -> str:
        ended = await client.run(f"soak turn {n}: look at the modules", timeout=120)
        client.notifications.clear()  # the bench keeps no history of its own
        client.asked.clear()
        api.requests.clear()
        return str(ended.params["outcome"])

    try:
        await soak.drive(run, client.pid, one_turn)
    finally:
        await client.close()
    return run


class Editor:
    """The ACP client side: allows what it is asked, counts the updates it gets."""

    def __init__(self) -> None:
        self.updates = 0

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:  # fmt: skip
        return allowed_once(options)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates += 1


async def soak_acp(soak: Soak, s: Scratch, api: FakeMessagesAPI) -> Run:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        ANTHROPIC_BASE_URL=api.base_url,
        ANTHROPIC_API_KEY=API_KEY,
        TILLER_DATA_DIR=str(s.data_dir),
        TILLER_MODEL=MODEL,
        **soak.probe_env("acp"),
    )
    command = soak.command("--acp")
    editor = Editor()
    with s.stderr.open("ab") as stderr:
        async with spawn_agent_process(
            cast(Client, editor), command[0], *command[1:], env=env, cwd=s.workspace,
            transport_kwargs={"stderr": stderr.fileno()},
        ) as (conn, process):  # fmt: skip
            await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 300)
            sid = (await conn.new_session(cwd=str(s.workspace), mcp_servers=[])).session_id
            run = Run("acp")

            async def one_turn(n: int) -> str:
                words = text_block(f"soak turn {n}: look at the modules")
                asked = conn.prompt(session_id=sid, prompt=[words])
                try:
                    answer = await asyncio.wait_for(asked, 120)
                except RequestError:
                    return "failed"
                finally:
                    api.requests.clear()
                return str(answer.stop_reason)

            await soak.drive(run, process.pid, one_turn)
            return run


FACES: dict[str, Callable[[Soak, Scratch, FakeMessagesAPI], Awaitable[Run]]] = {
    "lsp": soak_lsp,
    "acp": soak_acp,
}


async def soak_face(face: str, soak: Soak) -> tuple[Run, Counter[str]]:
    model = soak.model
    async with scratch() as s, FakeMessagesAPI(model, api_key=API_KEY, loop=True) as api:
        seed_workspace(s.workspace)
        try:
            run = await FACES[face](soak, s, api)
        except Exception:
            print(stderr_tail(s.stderr))
            raise
        if s.stderr.exists() and "Traceback" in s.stderr.read_text(errors="replace"):
            print(f"  {face}: the server's stderr holds a traceback:\n{stderr_tail(s.stderr, 40)}")
    return run, model.counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="per face (default 5)")
    parser.add_argument("--faces", nargs="*", choices=sorted(FACES), default=["lsp", "acp"])
    parser.add_argument("--warmup-turns", type=int, default=300, help="default 300")
    parser.add_argument("--warmup-minutes", type=float, default=0.0, help="and at least this")
    parser.add_argument("--sample-seconds", type=float, default=2.0)
    parser.add_argument("--fault-rate", type=float, default=0.12, help="share of requests")
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--probe", type=Path, help="write the in-server memory probe here")
    parser.add_argument("--json", type=Path, help="also write the figures (and samples) here")
    args = parser.parse_args()
    warmup = Warmup(args.warmup_turns, args.warmup_minutes)
    print(f"== soak, {args.minutes:g} min per face  ({machine_note()})", flush=True)
    written: dict[str, Any] = {}
    for face in args.faces:
        model = Model(random.Random(args.seed), args.fault_rate)
        soak = Soak(args.minutes, args.sample_seconds, args.probe, model, warmup)
        run, counts = asyncio.run(soak_face(face, soak))
        print(f"  {face}: model requests answered with a fault or a summary: {dict(counts)}")
        found = figures(run, warmup)
        for figure in found:
            print(figure.line(), flush=True)
        written[face] = {
            "figures": [asdict(f) for f in found],
            "faults": dict(counts),
            "samples": [asdict(s) for s in run.samples],
        }
        if args.probe:
            print(f"  {face}: probe written to {args.probe / f'{face}.txt'}")
    if args.json:
        args.json.write_text(json.dumps(written, indent=1))
    print(f"(slopes from the samples after a warm-up of {warmup.words()})")


if __name__ == "__main__":
    main()
