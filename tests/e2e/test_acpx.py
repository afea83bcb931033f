"""A third-party ACP client against ``tiller acp``: acpx (openclaw/acpx), the headless ACP
CLI, pinned in tests/e2e/acpx/package-lock.json and installed by scripts/setup-node-tests.sh.

Each step is an ``acpx --agent '<venv>/bin/tiller acp'`` command, as a user or a script runs
it, with the command a user configures: ``tiller acp`` takes its server from the warm
template (the test process's own, ``tests/e2e/conftest.py``), so each agent acpx starts is a
server forked for it, a fresh process that has read nothing of the session yet. The agent
talks to the fake Messages API (tests/fakeapi.py). acpx keeps its session
records under ``$HOME/.acpx``, so every test has its own HOME. How acpx answers permissions:
``--approve-all`` / ``--deny-all``; with neither, a question is asked on the terminal when
stdin and stderr are TTYs (here a pty), and ``--non-interactive-permissions fail`` answers
it ``cancelled`` when they are not.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import pty
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

import warm
from fakeapi import FakeMessagesAPI
from processes import alive, until
from test_acp import agent_env, assert_valid_history, tool_results
from test_turn_basics import text, tool_use

ACPX_DIR = Path(os.environ.get("TILLER_ACPX_DIR", Path(__file__).parent / "acpx"))
ACPX = ACPX_DIR / "node_modules" / ".bin" / "acpx"
AGENT = f"{Path(sys.executable).parent / 'tiller'} acp"  # the console script users configure

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="node/npm are missing: acpx cannot run (scripts/setup-node-tests.sh installs it)",
)


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


@dataclass
class Acpx:
    """acpx commands against ``tiller acp`` in ``workspace``, with their own HOME."""

    workspace: Path
    env: dict[str, str]

    def argv(self, *args: str) -> list[str]:
        # --ttl 1: the queue owner (which holds the agent) exits 1 s after its last prompt.
        return [str(ACPX), "--agent", AGENT, "--cwd", str(self.workspace), "--ttl", "1", *args]

    async def run(self, *args: str) -> Ran:
        proc = await asyncio.create_subprocess_exec(
            *self.argv(*args),
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 90)
        assert proc.returncode is not None
        return Ran(proc.returncode, out.decode(), err.decode())

    async def owner_gone(self) -> None:
        """Until no queue owner holds the agent (its 1 s idle TTL ran out), so the next
        prompt starts a new agent process, which loads the session. Each owner leaves a lock
        file naming its pid under ``$HOME/.acpx/queues`` (acpx's queueLockFilePath); waiting
        on those pids costs nothing, where asking ``acpx status`` started node each time."""
        queues = Path(self.env["HOME"]) / ".acpx" / "queues"
        for _ in range(600):
            if not any(alive(pid) for pid in owner_pids(queues)):
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"the acpx queue owners {owner_pids(queues)} never went away")


def owner_pids(queues: Path) -> list[int]:
    pids: list[int] = []
    for lock in queues.glob("*.lock"):
        with contextlib.suppress(OSError, ValueError):
            record = json.loads(lock.read_text())
            if isinstance(record, dict) and isinstance(record.get("pid"), int):
                pids.append(record["pid"])
    return pids


@pytest_asyncio.fixture
async def acpx(api: FakeMessagesAPI, workspace: Path, tmp_path: Path) -> AsyncIterator[Acpx]:
    if not ACPX.exists():
        pytest.fail(f"{ACPX} is missing: run scripts/setup-node-tests.sh")
    assert warm.SUITE is not None  # its XDG_RUNTIME_DIR is in os.environ, so in the agent's
    await until(warm.SUITE.connectable, 60)  # warm: every agent is forked, none spawned
    home = tmp_path / "home"
    home.mkdir()
    env = agent_env(api, tmp_path / "data")
    env["HOME"] = str(home)
    client = Acpx(workspace, env)
    yield client
    # acpx keeps its queue owners' sockets in /tmp/acpx-<sha256 of HOME, 10 hex digits>
    # (queueSocketBaseDir), outside the test's folders: gone with the owners, not left behind.
    await client.owner_gone()
    sockets = Path("/tmp") / f"acpx-{hashlib.sha256(str(home).encode()).hexdigest()[:10]}"
    shutil.rmtree(sockets, ignore_errors=True)


def read_pty(fd: int) -> bytes:
    """What the program wrote to its terminal; b"" once it closed it (Linux: EIO)."""
    try:
        return os.read(fd, 4096)
    except OSError:
        return b""


def agent_sessions(ran: Ran) -> list[str]:
    listed = json.loads(ran.out)
    assert listed["source"] == "agent", listed  # session/list, not acpx's own records
    return [s["sessionId"] for s in listed["sessions"]]


async def test_acpx_new_session_then_prompts_edit_and_load_that_session(
    acpx: Acpx, api: FakeMessagesAPI, workspace: Path
) -> None:
    api.enqueue(
        {"content": [text("Hello from Tiller.")]},
        {"content": [tool_use("write_file", "toolu_ok", path="kept.txt", content="kept\n")]},
        {"content": [text("Wrote kept.txt.")]},
        {"content": [tool_use("write_file", "toolu_no", path="denied.txt", content="no\n")]},
        {"content": [text("Left denied.txt alone.")]},
    )
    created = await acpx.run("--format", "json", "sessions", "new")
    assert created.code == 0, created
    session_id = json.loads(created.out)["acpxRecordId"]
    # Listed by the agent before its first prompt (it was not: it had nothing stored).
    assert agent_sessions(await acpx.run("--format", "json", "sessions", "list")) == [session_id]

    # The prompt starts a new agent process that loads the session `sessions new` made.
    said = await acpx.run("prompt", "say hello")
    assert said.code == 0, said
    assert "session/load" in said.out and "session/new" not in said.out
    assert "Hello from Tiller." in said.out and "[done] end_turn" in said.out

    # The queue owner exits 1 s after a prompt (--ttl 1): a prompt sent while it is exiting
    # fails with acpx's own "Queue owner is shutting down" (a race in the test, seen on a
    # slow machine). Wait until it is gone: this prompt starts a fresh owner.
    await acpx.owner_gone()
    approved = await acpx.run("--approve-all", "prompt", "write kept.txt")
    assert approved.code == 0, approved
    assert "Wrote kept.txt." in approved.out and "[done] end_turn" in approved.out
    assert (workspace / "kept.txt").read_text() == "kept\n"

    # Load again, in a fresh agent process: the history comes back, the session goes on.
    await acpx.owner_gone()
    denied = await acpx.run("--deny-all", "prompt", "write denied.txt")
    assert denied.code == 5, denied  # acpx: every permission request of the prompt denied
    assert "session/load" in denied.out
    assert "Left denied.txt alone." in denied.out and "[done] end_turn" in denied.out
    assert not (workspace / "denied.txt").exists()

    assert agent_sessions(await acpx.run("--format", "json", "sessions", "list")) == [session_id]
    assert_valid_history(api)
    last = api.message_requests()[-1].body["messages"]
    prompts = [
        m["content"][0]["text"]
        for m in last
        if m["role"] == "user" and m["content"][0].get("type") == "text"
    ]
    assert prompts == ["say hello", "write kept.txt", "write denied.txt"]
    results = {r["tool_use_id"]: r.get("is_error", False) for r in tool_results(api)}
    assert results == {"toolu_ok": False, "toolu_no": True}
    await acpx.owner_gone()


async def test_acpx_ctrl_c_while_it_asks_permission_cancels_the_turn(
    acpx: Acpx, api: FakeMessagesAPI, workspace: Path
) -> None:
    api.enqueue(
        {"content": [tool_use("write_file", "toolu_w", path="asked.txt", content="x\n")]},
        {"content": [text("This answer must never be asked for.")]},
    )
    # acpx asks on the terminal only when stdin and stderr are TTYs: give it a pty.
    leader, follower = pty.openpty()
    proc = await asyncio.create_subprocess_exec(
        *acpx.argv("exec", "write asked.txt"),
        env=acpx.env,
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    loop = asyncio.get_running_loop()
    shown = b""
    try:
        while b"Allow" not in shown:  # the question is open on the terminal
            chunk = await asyncio.wait_for(loop.run_in_executor(None, read_pty, leader), 60)
            assert chunk, f"acpx closed the terminal without asking: {shown!r}"
            shown += chunk
        proc.send_signal(signal.SIGINT)  # Ctrl+C: acpx sends session/cancel
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        os.close(leader)
    report = out.decode()
    assert "[done] cancelled" in report, report
    assert not (workspace / "asked.txt").exists()
    assert len(api.message_requests()) == 1  # no model request after the cancel


async def test_acpx_answering_a_question_cancelled_cancels_the_turn(
    acpx: Acpx, api: FakeMessagesAPI, workspace: Path
) -> None:
    # No terminal and --non-interactive-permissions fail: acpx answers the question
    # {"outcome": "cancelled"} and sends no session/cancel; the turn must still be cancelled.
    api.enqueue(
        {"content": [tool_use("write_file", "toolu_w", path="asked.txt", content="x\n")]},
        {"content": [text("This answer must never be asked for.")]},
    )
    ran = await acpx.run("--non-interactive-permissions", "fail", "exec", "write asked.txt")
    assert "[done] cancelled" in ran.out, ran
    assert ran.code == 5 and "Permission prompt unavailable" in ran.err, ran
    assert not (workspace / "asked.txt").exists()
    assert len(api.message_requests()) == 1


async def test_acpx_shows_a_custom_commands_notice_on_its_own_line_and_names_the_session_by_it(
    acpx: Acpx, api: FakeMessagesAPI, workspace: Path
) -> None:
    # Issue 36: acpx printed `/greet (project: …/greet.md)GREETED-OK`, and the session's title
    # was the command's expanded text.
    commands = workspace / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "greet.md").write_text("Say GREETED-OK to $ARGUMENTS.\n")
    api.enqueue({"content": [text("GREETED-OK")]})
    ran = await acpx.run("exec", "/greet World")
    assert ran.code == 0, ran
    assert f"*/greet (project: {commands / 'greet.md'})*\n\nGREETED-OK" in ran.out, ran
    listed = json.loads((await acpx.run("--format", "json", "sessions", "list")).out)
    assert [s.get("title") for s in listed["sessions"]] == ["/greet World"], listed
