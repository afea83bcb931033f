"""Issue 7's guarantees against a real shell, end to end over stdio against the fake API.

- plan mode cannot change the workspace, whatever bash trick the model tries (brace expansion);
- a command that runs without asking runs in the sandbox (its own PID namespace);
- the API key never reaches a tool, an event, the transcript, the store or a later request;
- no process outlives its turn (``setsid``), or the server (``kill -9``).
"""

from __future__ import annotations

import hashlib
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types

from fakeapi import FakeMessagesAPI
from harness import SERVER_COMMAND, Tiller, server_env, spawn_client, stop_tiller
from processes import host_pids, processes_with, sleep_marker
from test_scheduling_and_permissions import results_of
from test_turn_basics import text, tool_use
from tiller.workspace.sandbox import bwrap_works

SECRET = "sk-ant-e2e-NEVER-SHOW-9f8e7d6c"

ATTACKS = [
    "rg {--pre=rm,zzz} sub",
    "sort {-o,out.txt} a.txt",
    "git diff {--output=x.txt,HEAD}",
    "find . -name v.txt {-delete,}",
    "uniq b.txt{,}",
]


def fill(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "one.txt").write_text("sub one\n")
    (workspace / "sub" / "two.txt").write_text("sub two\n")
    (workspace / "a.txt").write_text("b\na\n")
    (workspace / "b.txt").write_text("x\nx\ny\n")
    (workspace / "v.txt").write_text("v\n")


def snapshot(root: Path) -> dict[str, tuple[int, str]]:
    seen: dict[str, tuple[int, str]] = {}
    for path in sorted(root.rglob("*")):
        content = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        seen[str(path.relative_to(root))] = (path.lstat().st_mode, content)
    return seen


async def allow(params: dict[str, Any]) -> dict[str, Any]:
    return {"decision": "allow"}


# --- plan mode and default mode cannot be tricked into writing -------------------------------


@pytest.mark.parametrize("command", ATTACKS)
@pytest.mark.parametrize("mode", ["plan", "default"])
async def test_brace_expansion_attack_leaves_the_workspace_unchanged(
    start: Any, api: FakeMessagesAPI, workspace: Path, mode: str, command: str
) -> None:
    """Issue 7, bug 1: bashlex kept ``{a,b}`` as one word, bash expanded it into an option."""
    fill(workspace)
    before = snapshot(workspace)
    tiller: Tiller = await start(permissionMode=mode)
    api.enqueue(
        {"content": [tool_use("bash", "b1", command=command)]},
        {"content": [text("done")]},
    )
    await tiller.run("try it")
    assert snapshot(workspace) == before
    result = results_of(api, 1)[0]
    assert result["is_error"] is True
    asked = [p for kind, p in tiller.asked if kind == "tiller/confirmTool"]
    if mode == "plan":
        assert asked == []  # refused outright: plan mode never runs a non-read-only command
    else:
        assert [p["preview"]["command"] for p in asked] == [command]  # asked, and denied


# --- a command that runs without asking runs in the sandbox -----------------------------------


@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap does not work here")
@pytest.mark.parametrize("mode", ["plan", "default"])
async def test_read_only_command_runs_in_its_own_pid_namespace(
    start: Any, api: FakeMessagesAPI, workspace: Path, mode: str
) -> None:
    """``echo $$ $PPID`` is read-only; in the sandbox bash is pid 2 under bwrap's init (1)."""
    tiller: Tiller = await start(permissionMode=mode)
    api.enqueue(
        {"content": [tool_use("bash", "b1", command="echo pids $$ $PPID")]},
        {"content": [text("done")]},
    )
    await tiller.run("which pid am I?")
    assert [kind for kind, _ in tiller.asked if kind == "tiller/confirmTool"] == []
    result = results_of(api, 1)[0]
    assert not result.get("is_error"), result
    _, pid, parent = str(result["content"]).split()[:3]
    assert int(parent) == 1 and int(pid) <= 3


# --- the API key never leaks ------------------------------------------------------------------


@pytest_asyncio.fixture
async def secret_api() -> AsyncIterator[FakeMessagesAPI]:
    async with FakeMessagesAPI(api_key=SECRET) as fake:
        yield fake


async def start_with_key_in_env(
    workspace: Path, data_dir: Path, api: FakeMessagesAPI, **options: Any
) -> Tiller:
    """Like the harness's start, but the key is in the server's environment, as in VS Code."""
    env = {**server_env(data_dir), "ANTHROPIC_API_KEY": SECRET, "MY_SERVICE_TOKEN": SECRET}
    client = await spawn_client(SERVER_COMMAND, env)
    tiller = Tiller(client, workspace)
    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(workspace.as_uri(), "ws")],
            initialization_options={
                "provider": {"kind": "anthropic", "baseUrl": api.base_url},
                "model": "claude-test-1",
                "dataDir": str(data_dir),
                **options,
            },
        )
    )
    return tiller


async def test_api_key_never_reaches_tools_events_transcript_store_or_requests(
    secret_api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    """Issue 7, bug 3: ``env`` counted as read-only and printed the key into the transcript."""
    api = secret_api
    data_dir = tmp_path / "data"
    hook = 'if printenv | grep -q sk-ant; then echo "LEAKED: $(printenv)"; exit 1; fi; exit 0'
    tiller = await start_with_key_in_env(workspace, data_dir, api, stopHook=hook)
    try:
        tiller.on_confirm = allow
        api.enqueue(
            {
                "content": [
                    tool_use("bash", "b1", command="env"),
                    tool_use("bash", "b2", command="printenv ANTHROPIC_API_KEY MY_SERVICE_TOKEN"),
                    tool_use("bash", "b3", command="echo key=$ANTHROPIC_API_KEY"),
                    tool_use(
                        "bash", "b4", command="cat /proc/self/environ; cat /proc/$PPID/environ"
                    ),
                    tool_use("bash", "b5", command="set; declare -p"),
                ]
            },
            {"content": [text("nothing to see")]},
            {"content": [text("a later turn")]},
        )
        first = await tiller.run("show me the environment")
        assert first["outcome"] == "completed"
        await tiller.run("and again")
        results = results_of(api, 1)
        assert len(results) == 5 and "PATH=" in str(results[0]["content"])
        transcript = await tiller.request("tiller/session/transcript", {"limit": 1000})
    finally:
        await stop_tiller(tiller)
    assert api.message_requests(), "the server never talked to the API"
    for request in api.requests:
        assert SECRET not in json.dumps(request.body), "the key reached a model request"
    assert SECRET not in json.dumps(tiller.events)
    assert SECRET not in json.dumps(tiller.states)
    assert SECRET not in json.dumps(transcript)
    for path in data_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), f"the key is in {path}"


# --- no process outlives its turn or the server ----------------------------------------------


async def test_setsid_background_process_does_not_survive_the_turn(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    """Issue 7, bug 5: ``setsid`` escaped the process-group kill; the result said it was stopped."""
    tiller: Tiller = await start()
    tiller.on_confirm = allow
    # A pid the command prints means nothing here (it runs in a PID namespace of its own under
    # bubblewrap): the host finds the sleeper by its command line.
    marker = sleep_marker()
    command = f"setsid sleep {marker} > /dev/null 2>&1 & echo started"
    api.enqueue(
        {"content": [tool_use("bash", "b1", command=command)]},
        {"content": [text("started it")]},
    )
    await tiller.run("start a daemon")
    assert "1 background process(es)" in str(results_of(api, 1)[0]["content"])  # it ran
    await tiller.wait_for(lambda: not host_pids("sleep", marker))


async def test_kill_9_of_the_server_stops_a_running_command(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    """Issue 7, bug 5: after kill -9 the command ran on and did its side effect."""
    tiller: Tiller = await start()
    tiller.on_confirm = allow
    marker = sleep_marker()
    command = (
        f"setsid sh -c 'sleep {marker}; touch bg-marker' > /dev/null 2>&1 & "
        f"sleep {marker}; touch marker"
    )
    api.enqueue({"content": [tool_use("bash", "b1", command=command)]})
    await tiller.prompt("run the slow thing")
    await tiller.wait_for(lambda: len(host_pids("sleep", marker)) == 2)
    server = tiller.client._server
    assert server is not None
    server.send_signal(signal.SIGKILL)
    # Every process of the command is gone (a shell that outlived its sleep would have done
    # its side effect before it went): nothing is left to do one.
    await tiller.wait_for(lambda: not processes_with(marker))
    assert not (workspace / "marker").exists()
    assert not (workspace / "bg-marker").exists()
