"""Drives the real Tiller server through one session and prints what it posted live and what it
journaled, for the extension's redraw test (test/unit/redraw.test.ts).

Run with the repository's venv Python (the one that has ``tiller`` and its dependencies)::

    .venv/bin/python tests/journal_sample.py

It starts the fake Messages API (tests/fakeapi.py) in this process and ``python -m tiller``
over stdio, then plays, as a user would:

1. a turn in ``default`` mode: thinking + text + ``read_file``; a tool-budget checkpoint
   (answered continue); an ``edit_file`` (allowed) and a ``write_file`` (denied, with
   feedback); a closing answer that breaks off mid-stream once (the step restarts);
2. the slash command ``/mode plan``;
3. a plan-mode turn: a plan rejected with feedback, a second one approved (accept edits),
   another checkpoint, an edit, a closing text;
4. ``tiller/rewind`` to before the plan turn (files and conversation), then
   ``tiller/undoRewind``.

Then it fetches ``tiller/session/transcript`` and prints one JSON document to stdout::

    {"sessionId": "...",
     "live": [{"event": <tiller/event params>}
              | {"request": <method>, "params": {...}, "result": <the answer sent>}, ...],
     "transcript": [<entries>]}

``live`` is in arrival order. Nothing else goes to stdout; the server's log goes to stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fakeapi import FakeMessagesAPI  # noqa: E402
from tiller.faces.client.jsonrpc import Handlers  # noqa: E402
from tiller.faces.client.server import ServerProcess  # noqa: E402

JSON = dict[str, Any]
API_KEY = "test-key"
TURN_TIMEOUT = 60.0


def text(value: str) -> JSON:
    return {"type": "text", "text": value}


def thinking(value: str) -> JSON:
    return {"type": "thinking", "thinking": value, "signature": "sig-sample"}


def tool_use(tool_id: str, name: str, **tool_input: object) -> JSON:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


FIRST_TURN: list[JSON] = [
    {
        "content": [
            thinking("The user wants notes.txt tidied. Read it first."),
            text("Let me look at **notes.txt** first."),
            tool_use("toolu_read", "read_file", path="notes.txt"),
        ]
    },
    {
        "content": [
            thinking("Fix the second line; add a changelog."),
            text("I'll fix the second line and add a changelog."),
            tool_use(
                "toolu_edit", "edit_file", path="notes.txt", old_string="wrold", new_string="world"
            ),
            tool_use("toolu_write", "write_file", path="CHANGES.md", content="- fixed a typo\n"),
        ]
    },
    {
        # Breaks off mid-answer: the server says it retries, and the step starts again.
        "content": [
            thinking("The write was denied."),
            text("A first attempt that breaks off here"),
        ],
        "midStreamError": {"afterEvents": 9, "type": "overloaded_error"},
    },
    {
        "content": [
            thinking("The write was denied."),
            text("Fixed the typo; no changelog, as you asked."),
        ]
    },
]

# With thinking on, every answer in a tool loop starts with a thinking block (the API says so).
PLAN_TURN: list[JSON] = [
    {
        "content": [
            thinking("A plan first."),
            text("Here is what I would do."),
            tool_use(
                "toolu_plan1",
                "exit_plan_mode",
                plan="1. Rewrite notes.txt\n2. Add a title\n3. Report",
            ),
        ]
    },
    {
        "content": [
            thinking("Smaller."),
            tool_use("toolu_plan2", "exit_plan_mode", plan="1. Add a title to `notes.txt`"),
        ]
    },
    {
        "content": [
            thinking("Approved: add it."),
            tool_use(
                "toolu_title",
                "edit_file",
                path="notes.txt",
                old_string="hello",
                new_string="# Notes\nhello",
            ),
        ]
    },
    {"content": [thinking("Done."), text("Added the title.")]},
]


class Session:
    """The client side: records every event and every question, answers the questions."""

    def __init__(self) -> None:
        self.live: list[JSON] = []
        self.changed = asyncio.Event()
        self.plans_asked = 0

    def handlers(self) -> Handlers:
        def on_event(params: Any) -> None:
            # Called in arrival order, synchronously (tiller.faces.client.jsonrpc).
            self.live.append({"event": params})
            self.changed.set()

        def answering(
            method: str, answer: Callable[[JSON], JSON]
        ) -> Callable[[Any], Awaitable[Any]]:
            async def handle(params: Any) -> Any:
                # The server sends nothing more for the turn until it has the answer, so
                # recording here keeps the arrival order.
                result = answer(params)
                self.live.append({"request": method, "params": params, "result": result})
                return result

            return handle

        return Handlers(
            notifications={"tiller/event": on_event},
            requests={
                "tiller/confirmTool": answering("tiller/confirmTool", self.confirm),
                "tiller/approvePlan": answering("tiller/approvePlan", self.approve_plan),
                "tiller/checkpoint": answering("tiller/checkpoint", lambda _: {"continue": True}),
            },
        )

    def confirm(self, params: JSON) -> JSON:
        if params.get("toolUseId") == "toolu_write":
            return {"decision": "deny", "feedback": "no changelog, please"}
        return {"decision": "allow"}

    def approve_plan(self, params: JSON) -> JSON:
        self.plans_asked += 1
        if self.plans_asked == 1:
            return {"approved": False, "feedback": "smaller, please"}
        return {"approved": True, "mode": "acceptEdits"}

    async def turn_end(self, turn_id: str) -> JSON:
        async def ended() -> JSON:
            while True:
                for item in self.live:
                    event = item.get("event") or {}
                    if event.get("type") == "turnEnded" and event.get("turnId") == turn_id:
                        return dict(event)
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(ended(), TURN_TIMEOUT)


def log_line(line: str) -> None:
    """The server's log goes to stderr: stdout carries the JSON document alone."""
    sys.stderr.write(line)


async def run_turn(server: ServerProcess, session: Session, prompt: str) -> str:
    started = await server.request("tiller/prompt", {"text": prompt})
    if started.get("status") != "started":
        raise RuntimeError(f"the prompt {prompt!r} did not start a turn: {started}")
    turn_id = str(started["turnId"])
    ended = await session.turn_end(turn_id)
    if ended.get("outcome") != "completed":
        raise RuntimeError(f"the turn {prompt!r} ended {ended}")
    return turn_id


async def sample(workspace: Path, data_dir: Path, warm: bool = False) -> JSON:
    """``warm``: the server is forked from the warm template of this environment's runtime
    dir (the pytest suite's own); else a plain spawn, as run by the extension's unit tests
    too, which must not start (and leave) a warm template in the user's own runtime dir."""
    (workspace / "notes.txt").write_text("hello\nwrold\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["TILLER_DATA_DIR"] = str(data_dir)
    env.setdefault("TILLER_LOG_LEVEL", "WARNING")
    if not warm:
        env["TILLER_WARM"] = "0"
    session = Session()
    async with FakeMessagesAPI(api_key=API_KEY) as api:
        server = await ServerProcess.start(session.handlers(), log_line, env=env)
        try:
            await server.initialize(
                (workspace,),
                {
                    "provider": {"kind": "anthropic", "baseUrl": api.base_url, "apiKey": API_KEY},
                    "model": "claude-sonnet-5-5",
                    "thinking": {"enabled": True, "effort": "medium"},
                    "permissionMode": "default",
                    "toolBudget": 2,
                    "dataDir": str(data_dir),
                },
                "journal-sample",
            )
            api.enqueue(*FIRST_TURN)
            await run_turn(server, session, "Tidy up notes.txt")
            handled = await server.request("tiller/prompt", {"text": "/mode plan"})
            if handled.get("status") != "handled":
                raise RuntimeError(f"/mode plan was not handled: {handled}")
            api.enqueue(*PLAN_TURN)
            plan_turn = await run_turn(server, session, "Give notes.txt a title")
            rewound = await server.request(
                "tiller/rewind", {"turnId": plan_turn, "files": True, "conversation": True}
            )
            await server.request("tiller/undoRewind", {"undoId": rewound["undoId"]})
            state = await server.request("tiller/getState", {})
            session_id = str(state["sessionId"])
            transcript = await server.request(
                "tiller/session/transcript", {"sessionId": session_id, "limit": 1000}
            )
            if transcript.get("more"):
                raise RuntimeError("the transcript did not fit one page")
        finally:
            await server.shutdown()
    return {"sessionId": session_id, "live": session.live, "transcript": transcript["entries"]}


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="tiller-journal-sample-") as tmp:
        workspace, data_dir = Path(tmp) / "ws", Path(tmp) / "data"
        workspace.mkdir()
        result = asyncio.run(sample(workspace, data_dir))
    json.dump(result, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
