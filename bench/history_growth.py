"""How the cost of a step grows with the history (issue 23, "cost flat in session length").

(a) Turns of 1,000 steps with an instant model (one ``read_file`` of a tiny file per step,
then a final text), as in ``step_overhead.py``, ROUNDS times on fresh sessions of one server.
The harness's time per step at a history of k steps is the median gap between consecutive
``toolFinished`` events (arrival on the client) over the 10 steps ending at step k (k = 10,
100, 1,000). The bare SDK loop's time per step at k: the same 10 recorded request bodies
streamed with ``AsyncAnthropic.messages.stream`` from this process against the same fake,
each timed, median. Each round's bare loop runs right after its turn, so the two are measured
under the same load (interleaved: turn, bare, turn, bare, ...), and the figure is the median
over the rounds. Both include the fake's own work on the body (parse, validate, stream), which
grows with the history as the SDK's does. CPU time gives a view that load does not skew: the
harness's is the server's (every thread, from ``/proc/PID/task/*/schedstat``, in ns) plus
this process's (the fake, the client) over the same 10 steps; the bare loop's is this
process's (the fake and the SDK). The server's peak RSS (VmHWM) after those turns is the
"memory during a 1,000-step turn".

(b) A session of 5,000 turns (one short turn played through the server, its messages and
transcript entries then copied 5,000 times in the store): a fresh server, then
``tiller/session/resume`` + ``tiller/session/transcript`` (its default page, the newest
entries) timed on the client once the server's SDK warm-up is over (``listModels``
answered), median of 3 fresh servers.

This process's garbage collector is off while timing (see ``step_overhead.py``).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic

from _common import (
    API_KEY,
    FakeMessagesAPI,
    Figure,
    Scratch,
    fake_options,
    main,
    median,
    scratch,
    stderr_tail,
    text,
)
from _lsp import Received, TillerClient, rss_kib
from _sdk_replay import reading_model, stream_once

STEPS = 1000
SIZES = (10, 100, 1000)
WINDOW = 10
RESUME_TURNS = 5000
RESUME_ROUNDS = 3
ROUNDS = 3  # 1,000-step turns, each followed at once by its bare SDK loop
JSON = dict[str, Any]


next_step = reading_model(STEPS)


def task_cpu_ns(pid: int) -> int:
    """CPU time of every thread of ``pid`` so far, in ns (``/proc/PID/task/*/schedstat``: the
    scheduler's own count, not ``/proc/PID/stat``'s 10 ms ticks)."""
    total = 0
    for schedstat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int(schedstat.read_text().split()[0])
    return total


@dataclass(frozen=True)
class Mark:
    """When a ``toolFinished`` was seen: wall time, the server's and this process's CPU."""

    at: float
    server_ns: int
    bench_ns: int


async def finished_marks(client: TillerClient, turn_id: str) -> tuple[Received, list[Mark]]:
    """Wait for ``turnEnded``, marking each ``toolFinished`` as it arrives (looking only at new
    messages: ``client.wait_event`` scans every notification on every message, quadratic in
    this bench's 6,000 events)."""
    seen = 0
    marks: list[Mark] = []

    def ended() -> Received | None:
        nonlocal seen
        fresh = client.notifications[seen:]
        seen = len(client.notifications)
        for n in fresh:
            if n.params.get("turnId") != turn_id:
                continue
            if n.params.get("type") == "toolFinished":
                marks.append(Mark(n.at, task_cpu_ns(client.pid), time.process_time_ns()))
            elif n.params.get("type") == "turnEnded":
                return n
        return None

    return await client.wait_for(ended, timeout=900), marks


@dataclass(frozen=True)
class AtSize:
    """One round's figures at one history size, per step: wall ms of the harness and of the
    bare SDK loop, and their CPU ms (harness: the server plus this process, which runs the
    fake; bare: this process, the fake and the SDK)."""

    harness_ms: float
    bare_ms: float
    harness_cpu_ms: float
    bare_cpu_ms: float

    @property
    def ratio(self) -> float:
        return self.harness_ms / self.bare_ms

    @property
    def cpu_ratio(self) -> float:
        return self.harness_cpu_ms / self.bare_cpu_ms


def window(k: int) -> range:
    """Gap i: toolFinished i-1 -> toolFinished i, i.e. request body i (a history of i steps)."""
    return range(k - WINDOW + 1, k) if k == STEPS else range(k - WINDOW + 1, k + 1)


async def bare_at(sdk: anthropic.AsyncAnthropic, api: FakeMessagesAPI, bodies: list[JSON], k: int
                  ) -> tuple[float, float]:  # fmt: skip
    """The bare SDK loop over the window's bodies: median wall ms, CPU ms per step."""
    steps = window(k)
    api.enqueue(*([next_step] * len(steps)))
    cpu = time.process_time_ns()
    wall = median([await stream_once(sdk, bodies[i]) * 1000 for i in steps])
    cpu_ms = (time.process_time_ns() - cpu) / len(steps) / 1e6
    api.requests.clear()
    return wall, cpu_ms


async def one_round(
    client: TillerClient, api: FakeMessagesAPI, sdk: anthropic.AsyncAnthropic
) -> tuple[dict[int, AtSize], float]:
    """A 1,000-step turn on a fresh session, then at once the bare loop over the same bodies
    (so both run under the same load); the figures at each size and the turn's seconds."""
    await client.request("tiller/session/new")
    api.requests.clear()
    gc.collect()
    api.enqueue(*([next_step] * (STEPS + 1)))
    started = time.perf_counter()
    turn = await client.prompt("read tiny.txt over and over")
    ended, marks = await finished_marks(client, turn)
    if ended.params["outcome"] != "completed":
        raise RuntimeError(f"turn ended {ended.params}")
    bodies = [r.body for r in api.requests if r.path == "/v1/messages"]
    api.requests.clear()
    gc.collect()
    if len(marks) != STEPS or len(bodies) != STEPS + 1:
        raise RuntimeError(f"saw {len(marks)} tool runs, {len(bodies)} requests")
    found: dict[int, AtSize] = {}
    for k in SIZES:
        steps = window(k)
        harness = median([(marks[i].at - marks[i - 1].at) * 1000 for i in steps])
        first, last = marks[steps.start - 1], marks[steps.stop - 1]
        cpu_ns = (last.server_ns - first.server_ns) + (last.bench_ns - first.bench_ns)
        bare, bare_cpu = await bare_at(sdk, api, bodies, k)
        found[k] = AtSize(harness, bare, cpu_ns / len(steps) / 1e6, bare_cpu)
    return found, ended.at - started


def size_figures(k: int, at: list[AtSize]) -> list[Figure]:
    """The medians over the rounds at one history size."""
    steps = window(k)
    note = f"medians of {len(at)} rounds, each the median of steps {steps.start}-{steps.stop - 1}"
    cpu_note = "server + bench CPU vs bench CPU; both include the fake's work"
    name = f"step at {k} steps"
    return [
        Figure(f"{name} of history: harness", median([a.harness_ms for a in at]), "ms", note=note),
        Figure(f"{name} of history: bare SDK", median([a.bare_ms for a in at]), "ms", note=note),
        Figure(f"{name}: harness / bare SDK, wall", median([a.ratio for a in at]), "x", 1.3, "<="),
        Figure(f"{name}: harness / bare SDK, CPU", median([a.cpu_ratio for a in at]), "x", 1.3,
               "<=", note=cpu_note),
    ]  # fmt: skip


async def long_turn(s: Scratch, api: FakeMessagesAPI) -> list[Figure]:
    options = fake_options(api, s.data_dir)
    client = await TillerClient.start(s.workspace, s.data_dir, options, s.stderr)
    sdk = anthropic.AsyncAnthropic(base_url=api.base_url, api_key=API_KEY)
    try:
        await client.run("warm up")
        api.enqueue({"content": [text("warm the bench's own SDK connection")]})
        await stream_once(sdk, api.requests[-1].body)
        rounds: list[dict[int, AtSize]] = []
        for n in range(ROUNDS):
            found, turn_s = await one_round(client, api, sdk)
            rounds.append(found)
            load = os.getloadavg()[0]
            shown = ", ".join(
                f"{k}: {f.harness_ms:.1f}/{f.bare_ms:.1f} ms = {f.ratio:.2f}x "
                f"(CPU {f.harness_cpu_ms:.1f}/{f.bare_cpu_ms:.1f} ms = {f.cpu_ratio:.2f}x)"
                for k, f in found.items()
            )
            print(f"  round {n + 1} (turn {turn_s:.1f} s, load {load:.2f}): {shown}", flush=True)
        hwm = rss_kib(client.pid)["VmHWM"] / 1024
        figures: list[Figure] = []
        for k in SIZES:
            figures += size_figures(k, [r[k] for r in rounds])
        peak = f"peak server RSS after {ROUNDS} {STEPS}-step turns"
        figures.append(Figure(peak, hwm, "MiB", 150, "<="))
        return figures
    except Exception:
        print(stderr_tail(s.stderr))
        raise
    finally:
        await client.close()
        await sdk.close()


def grow_session(db_path: Path, session_id: str, turns: int) -> None:
    """Copy the session's one turn (messages and entries) until it has ``turns`` turns."""
    db = sqlite3.connect(db_path)
    with db:
        messages = db.execute(
            "SELECT turn_id, role, content FROM messages WHERE session_id=? ORDER BY idx",
            (session_id,),
        ).fetchall()
        entries = db.execute(
            "SELECT turn_id, kind, data FROM entries WHERE session_id=? ORDER BY seq",
            (session_id,),
        ).fetchall()
        db.execute("DELETE FROM messages WHERE session_id=?", (session_id,))
        db.execute("DELETE FROM entries WHERE session_id=?", (session_id,))
        idx = seq = 0
        for n in range(turns):
            copy = {t: f"{t}-{n}" for t, _, _ in messages + entries if t}
            for turn_id, role, content in messages:
                row = (session_id, idx, copy.get(turn_id), role, content)
                db.execute("INSERT INTO messages VALUES (?,?,?,?,?)", row)
                idx += 1
            for turn_id, kind, data in entries:
                seq += 1
                tagged = json.dumps({**json.loads(data), "turnId": copy.get(turn_id)})
                row = (session_id, seq, copy.get(turn_id), kind, tagged)
                db.execute("INSERT INTO entries VALUES (?,?,?,?,?)", row)
        db.execute("UPDATE sessions SET turns=? WHERE id=?", (turns, session_id))
    db.close()


async def resume_long_session(s: Scratch, api: FakeMessagesAPI) -> list[Figure]:
    options = fake_options(api, s.data_dir)
    client = await TillerClient.start(s.workspace, s.data_dir, options, s.stderr)
    try:
        api.enqueue({"content": [text("Hello there, a short answer.")]})
        await client.run("say hello")
        state = await client.request("tiller/getState")
        session_id = str(state["sessionId"])
    finally:
        await client.close()
    grow_session(s.data_dir / "sessions.sqlite3", session_id, RESUME_TURNS)
    times: list[float] = []
    for _ in range(RESUME_ROUNDS):
        client = await TillerClient.start(s.workspace, s.data_dir, options, s.stderr)
        try:
            await client.request("tiller/listModels", timeout=60)  # the SDK warm-up is over
            started = time.perf_counter()
            await client.request("tiller/session/resume", {"sessionId": session_id})
            at, page = await client.request_timed(
                "tiller/session/transcript", {"sessionId": session_id}
            )
            times.append((at - started) * 1000)
            if not page["entries"] or not page["more"]:
                raise RuntimeError(f"unexpected last page: {len(page['entries'])} entries")
        finally:
            await client.close()
    shown = ", ".join(f"{t:.0f}" for t in times)
    print(f"  resume + last page of {RESUME_TURNS} turns: {shown} ms")
    return [
        Figure(
            f"resume a {RESUME_TURNS}-turn session to its last page",
            median(times),
            "ms",
            300,
            "<=",
            note=f"median of {RESUME_ROUNDS} fresh servers",
        )
    ]


async def measure() -> list[Figure]:
    gc.disable()
    try:
        async with scratch() as s, FakeMessagesAPI(api_key=API_KEY) as api:
            (s.workspace / "tiny.txt").write_text("hello\n")
            figures = await long_turn(s, api)
            return figures + await resume_long_session(s, api)
    finally:
        gc.enable()


if __name__ == "__main__":
    main("history growth", measure)
