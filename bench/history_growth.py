"""How the cost of a step grows with the history (issue 23, "cost flat in session length").

(a) One turn of 1,000 steps with an instant model (one ``read_file`` of a tiny file per step,
then a final text), as in ``step_overhead.py``. The harness's time per step at a history of
k steps is the median gap between consecutive ``toolFinished`` events (arrival on the client)
over the 10 steps ending at step k (k = 10, 100, 1,000). The bare SDK loop's time per step
at k: the same 10 recorded request bodies streamed with ``AsyncAnthropic.messages.stream``
from this process against the same fake, each timed, median. Both include the fake's own
work on the body (parse, validate, stream), which grows with the history as the SDK's does.
The server's peak RSS (VmHWM) after that turn is the "memory during a 1,000-step turn".

(b) A session of 5,000 turns (one short turn played through the server, its messages and
transcript entries then copied 5,000 times in the store): a fresh server, then
``tiller/session/resume`` + ``tiller/session/transcript`` (its default page, the newest
entries) timed on the client once the server's SDK warm-up is over (``listModels``
answered), median of 3 fresh servers.

This process's garbage collector is off while timing (see ``step_overhead.py``).
"""

from __future__ import annotations

import gc
import json
import sqlite3
import time
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
    tool_results_in,
    tool_use,
)
from _lsp import Received, TillerClient, rss_kib

STEPS = 1000
SIZES = (10, 100, 1000)
WINDOW = 10
RESUME_TURNS = 5000
RESUME_ROUNDS = 3
JSON = dict[str, Any]


def next_step(body: JSON) -> JSON:
    done = tool_results_in(body)
    if done < STEPS:
        return {"content": [tool_use("read_file", f"toolu_step_{done}", path="tiny.txt")]}
    return {"content": [text(f"Read it {done} times.")]}


async def stream_once(client: anthropic.AsyncAnthropic, body: JSON) -> float:
    params = {k: v for k, v in body.items() if k != "stream"}
    started = time.perf_counter()
    async with client.messages.stream(**params) as stream:
        async for _event in stream:
            pass
        await stream.get_final_message()
    return time.perf_counter() - started


async def turn_ended(client: TillerClient, turn_id: str) -> Received:
    """Wait for ``turnEnded`` looking only at new messages (``client.wait_event`` scans every
    notification on every message: quadratic in this bench's 6,000 events)."""
    seen = 0

    def ended() -> Received | None:
        nonlocal seen
        fresh = client.notifications[seen:]
        seen = len(client.notifications)
        for n in fresh:
            if n.params.get("type") == "turnEnded" and n.params.get("turnId") == turn_id:
                return n
        return None

    return await client.wait_for(ended, timeout=900)


async def long_turn(s: Scratch, api: FakeMessagesAPI) -> list[Figure]:
    options = fake_options(api, s.data_dir)
    client = await TillerClient.start(s.workspace, s.data_dir, options, s.stderr)
    sdk = anthropic.AsyncAnthropic(base_url=api.base_url, api_key=API_KEY)
    try:
        await client.run("warm up")
        api.enqueue({"content": [text("warm the bench's own SDK connection")]})
        await stream_once(sdk, api.requests[-1].body)
        await client.request("tiller/session/new")
        api.requests.clear()
        gc.collect()
        api.enqueue(*([next_step] * (STEPS + 1)))
        started = time.perf_counter()
        turn = await client.prompt("read tiny.txt over and over")
        ended = await turn_ended(client, turn)
        turn_s = ended.at - started
        if ended.params["outcome"] != "completed":
            raise RuntimeError(f"turn ended {ended.params}")
        hwm = rss_kib(client.pid)["VmHWM"] / 1024
        finished = [
            n.at
            for n in client.notifications
            if n.params.get("type") == "toolFinished" and n.params.get("turnId") == turn
        ]
        bodies = [r.body for r in api.requests if r.path == "/v1/messages"]
        api.requests.clear()
        gc.collect()
        if len(finished) != STEPS or len(bodies) != STEPS + 1:
            raise RuntimeError(f"saw {len(finished)} tool runs, {len(bodies)} requests")
        figures: list[Figure] = []
        for k in SIZES:
            # gap i: toolFinished i-1 -> toolFinished i, i.e. request body i (history of i steps)
            steps = range(k - WINDOW + 1, k) if k == STEPS else range(k - WINDOW + 1, k + 1)
            harness = median([(finished[i] - finished[i - 1]) * 1000 for i in steps])
            api.enqueue(*([next_step] * len(steps)))
            bare = median([await stream_once(sdk, bodies[i]) * 1000 for i in steps])
            api.requests.clear()
            print(f"  {k:>5} steps: harness {harness:.2f} ms, bare SDK {bare:.2f} ms")
            note = f"median of steps {steps.start}-{steps.stop - 1}"
            figures += [
                Figure(f"step at {k} steps of history: harness", harness, "ms", note=note),
                Figure(f"step at {k} steps of history: bare SDK", bare, "ms", note=note),
                Figure(f"step at {k} steps: harness / bare SDK", harness / bare, "x", 1.3, "<="),
            ]
        print(f"  whole turn: {turn_s:.1f} s")
        figures.append(Figure(f"peak server RSS after a {STEPS}-step turn", hwm, "MiB", 150, "<="))
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
