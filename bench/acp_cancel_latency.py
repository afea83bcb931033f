"""ACP cancel latency: `session/cancel` sent -> the `session/prompt` answer (`cancelled`)
received, on the client (the Python SDK's client side against ``python -m tiller --acp``).

(a) mid-stream: the fake API streams a few text events, then stalls (``hangAfterEvents``);
    the cancel goes out as soon as the first ``agent_message_chunk`` has arrived.
(b) mid-bash: the model calls ``bash`` ``sleep 30`` (read-only: runs without a question);
    the cancel goes out 50 ms after its ``tool_call_update in_progress`` arrived.

One agent serves all iterations (a warm-up turn first loads the SDK), N=20 each.
Target: p95 < 100 ms (issue 10).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any, cast

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.core import ClientSideConnection
from acp.interfaces import Client
from acp.schema import (
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from _common import (
    API_KEY,
    MODEL,
    FakeMessagesAPI,
    Figure,
    allowed_once,
    main,
    percentile,
    scratch,
    stderr_tail,
    text,
    tool_use,
)

N = 20
TARGET_MS = 100.0
BASH_SETTLE_SECONDS = 0.05


class Editor:
    """Records arrival times of updates; allows whatever is asked."""

    def __init__(self) -> None:
        self.updates: list[tuple[float, Any]] = []
        self.changed = asyncio.Event()

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:  # fmt: skip
        return allowed_once(options)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((time.perf_counter(), update))
        self.changed.set()

    async def wait(self, predicate: Any, timeout: float = 10) -> None:
        async def waiting() -> None:
            while not any(predicate(u) for _, u in self.updates):
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(waiting(), timeout)


async def cancel_and_time(
    conn: ClientSideConnection, session_id: str, prompt: asyncio.Task[Any]
) -> float:
    sent = time.perf_counter()
    await conn.cancel(session_id=session_id)
    answer = await asyncio.wait_for(prompt, 10)
    answered = time.perf_counter()
    if answer.stop_reason != "cancelled":
        raise RuntimeError(f"the prompt answered {answer.stop_reason}")
    return (answered - sent) * 1000


async def mid_stream(
    conn: ClientSideConnection, editor: Editor, api: FakeMessagesAPI, sid: str, i: int
) -> float:
    api.enqueue({"content": [text(f"Streaming answer number {i}, " * 20)], "hangAfterEvents": 4})
    editor.updates.clear()
    prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block(f"s{i}")]))
    await editor.wait(lambda u: u.session_update == "agent_message_chunk")
    return await cancel_and_time(conn, sid, prompt)


async def mid_bash(
    conn: ClientSideConnection, editor: Editor, api: FakeMessagesAPI, sid: str, i: int
) -> float:
    api.enqueue({"content": [tool_use("bash", f"bash_{i}", command="sleep 30")]})
    editor.updates.clear()
    prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block(f"b{i}")]))
    await editor.wait(
        lambda u: u.session_update == "tool_call_update" and u.status == "in_progress"
    )
    await asyncio.sleep(BASH_SETTLE_SECONDS)
    return await cancel_and_time(conn, sid, prompt)


async def measure() -> list[Figure]:
    async with scratch() as s, FakeMessagesAPI(api_key=API_KEY) as api:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(
            ANTHROPIC_BASE_URL=api.base_url,
            ANTHROPIC_API_KEY=API_KEY,
            TILLER_DATA_DIR=str(s.data_dir),
            TILLER_MODEL=MODEL,
        )
        editor = Editor()
        # Only the requests this editor is sent; the SDK answers method-not-found for the rest.
        client = cast(Client, editor)
        with s.stderr.open("ab") as stderr:
            try:
                async with spawn_agent_process(
                    client, sys.executable, "-m", "tiller", "--acp", env=env, cwd=s.workspace,
                    transport_kwargs={"stderr": stderr.fileno()},
                ) as (conn, _):  # fmt: skip
                    await conn.initialize(protocol_version=PROTOCOL_VERSION)
                    sid = (await conn.new_session(cwd=str(s.workspace), mcp_servers=[])).session_id
                    warm = await conn.prompt(session_id=sid, prompt=[text_block("warm up")])
                    if warm.stop_reason != "end_turn":
                        raise RuntimeError(f"warm-up turn: {warm.stop_reason}")
                    results: list[Figure] = []
                    for label, one in (("mid-stream", mid_stream), ("mid-bash", mid_bash)):
                        samples = [await one(conn, editor, api, sid, i) for i in range(N)]
                        print(f"  {label} samples (ms): {' '.join(f'{v:.1f}' for v in samples)}")
                        note = f"N={N}"
                        results += [
                            Figure(f"acp cancel {label} p50", percentile(samples, 50), "ms",
                                   note=note),
                            Figure(f"acp cancel {label} p95", percentile(samples, 95), "ms",
                                   TARGET_MS, note=note),
                            Figure(f"acp cancel {label} max", max(samples), "ms", note=note),
                        ]  # fmt: skip
                    return results
            except Exception:
                print(stderr_tail(s.stderr))
                raise


if __name__ == "__main__":
    main("ACP cancel latency", measure)
