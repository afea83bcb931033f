"""bash: real subprocesses, real signals, real process groups."""

from __future__ import annotations

import asyncio
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from processes import alive, host_pids, processes_with, sleep_marker, until
from tiller.tools import shell
from tiller.tools.base import OUTPUT_CAP, ToolContext, ToolResult, read_only_call
from tiller.tools.shell import Bash, LiveOutput, OutputBuffer
from tiller.workspace.sandbox import Isolated, ShellPolicy, bwrap_works
from tiller.workspace.tool_env import tool_env


@pytest.fixture
def root(ws: Path) -> str:
    return str(ws.resolve())


async def bash(ctx: ToolContext, command: str, limit: float | None = None) -> ToolResult:
    tool_input: dict[str, object] = {"command": command}
    if limit is not None:
        tool_input["timeout_seconds"] = limit
    return await Bash().run(tool_input, ctx)


async def wait_dead(pid: int) -> None:
    """Wait until ``pid`` is gone (it must go)."""
    await until(lambda: not alive(pid))


def read_pid(path: Path) -> str:
    return path.read_text().strip() if path.exists() else ""


async def wait_for_file(path: Path) -> str:
    """Wait until ``path`` holds something (it must); returns it, stripped."""
    return await until(lambda: read_pid(path))


SLEEPER = "(sleep 30; touch slept) & echo $! > child.pid"
"""A background sleeper that leaves ``slept`` in the workspace if it ever wakes up."""


async def sleeper_killed(ws: Path) -> None:
    """The sleeper is gone, and was killed: not waited for (then it would have left
    ``slept``), so nothing of the command outlives its result."""
    await wait_dead(int(read_pid(ws / "child.pid")))
    assert not (ws / "slept").exists()


async def test_bash_runs_in_workspace_root(root: str, ctx: ToolContext) -> None:
    result = await bash(ctx, "pwd")
    assert not result.is_error
    assert result.output.strip() == root


async def test_bash_merges_stderr_into_output(ctx: ToolContext) -> None:
    result = await bash(ctx, "echo out; echo err >&2")
    assert result.output.splitlines() == ["out", "err"]


async def test_bash_nonzero_exit_is_error_with_code(ctx: ToolContext) -> None:
    result = await bash(ctx, "echo partial; exit 3")
    assert result.is_error
    assert result.output.startswith("exit code 3") and "partial" in result.output


async def test_bash_killed_by_signal_is_reported(ctx: ToolContext) -> None:
    result = await bash(ctx, "kill -KILL $$")
    assert result.is_error and "SIGKILL" in result.output


async def test_bash_stdin_is_empty(ctx: ToolContext) -> None:
    result = await bash(ctx, "cat; echo done", limit=5)
    assert not result.is_error  # cat read no stdin: it did not wait for the time limit
    assert result.output.strip() == "done"


async def test_bash_no_output_says_so(ctx: ToolContext) -> None:
    result = await bash(ctx, "true")
    assert not result.is_error and result.output == "(no output)"


async def test_bash_invalid_utf8_output_is_replaced(ctx: ToolContext) -> None:
    result = await bash(ctx, r"printf 'ok \xff\xfe end'")
    assert result.output.startswith("ok ") and result.output.endswith(" end")
    assert "\ufffd" in result.output


async def test_bash_bad_input_is_error_result(ctx: ToolContext) -> None:
    tool = Bash()
    for bad in (
        {},
        {"command": ""},
        {"command": "  "},
        {"command": 5},
        {"command": "ls", "timeout_seconds": 0},
        {"command": "ls", "timeout_seconds": 601},
        {"command": "ls", "timeout_seconds": "10"},
        {"command": "ls", "timeout_seconds": True},
    ):
        result = await tool.run(bad, ctx)
        assert result.is_error, bad


async def test_bash_preview_is_command_with_cwd(root: str, ctx: ToolContext) -> None:
    preview = await Bash().preview({"command": "make test"}, ctx)
    assert preview.to_wire() == {
        "kind": "command",
        "command": "make test",
        "cwd": root,
    }


def test_bash_is_read_only_follows_the_parser(ws: Path) -> None:
    tool = Bash()
    assert tool.is_read_only_in({"command": "sleep 0.2"}, ws)
    assert tool.is_read_only_in({"command": "git status && ls | wc -l"}, ws)
    assert not tool.is_read_only_in({"command": "rm -rf build"}, ws)
    assert not tool.is_read_only_in({"command": None}, ws)
    assert not tool.is_read_only_in({}, ws)


def test_bash_without_a_workspace_is_never_read_only(ws: Path) -> None:
    assert not Bash().is_read_only({"command": "ls"})
    assert Bash(workspace=ws).is_read_only({"command": "ls"})


def test_read_only_call_gives_bash_the_context_workspace(ctx: ToolContext) -> None:
    assert read_only_call(Bash(), {"command": "ls"}, ctx)
    assert not read_only_call(Bash(), {"command": "cat ../x"}, ctx)


def test_read_only_call_leaves_other_tools_alone(ctx: ToolContext) -> None:
    from tiller.tools.registry import default_tools

    for tool in default_tools():
        read_only_call(tool, {}, ctx)  # no TypeError: only bash takes the workspace


async def test_bash_timeout_kills_whole_process_group(ws: Path, ctx: ToolContext) -> None:
    # 2 s: time for the shell to start the sleeper under load (it must, before the timeout).
    result = await bash(ctx, f"{SLEEPER}; echo started; sleep 30; touch slept", limit=2)
    assert result.is_error
    assert "timed out after 2 s" in result.output and "started" in result.output
    await sleeper_killed(ws)


async def test_bash_timeout_sigkills_what_ignores_sigterm(
    ws: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shell, "TIMEOUT_GRACE_SECONDS", 0.3)
    command = f"trap '' TERM; {SLEEPER}; sleep 30; touch slept"
    result = await bash(ctx, command, limit=2)
    assert result.is_error and "timed out" in result.output
    await sleeper_killed(ws)


async def test_bash_cancel_kills_sleep_child(ws: Path, ctx: ToolContext) -> None:
    task = asyncio.create_task(bash(ctx, f"{SLEEPER}; wait"))
    child = int(await wait_for_file(ws / "child.pid"))
    assert alive(child)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await sleeper_killed(ws)


async def test_bash_cancel_sigkills_child_ignoring_sigterm(ws: Path, ctx: ToolContext) -> None:
    """How long the grace before SIGKILL takes: bench/classifier_cost.py."""
    task = asyncio.create_task(bash(ctx, f"trap '' TERM; {SLEEPER}; wait"))
    await wait_for_file(ws / "child.pid")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await sleeper_killed(ws)


async def test_bash_does_not_block_event_loop(ws: Path, ctx: ToolContext) -> None:
    """The command waits for a file that only another task on the loop makes."""

    async def release() -> None:
        await wait_for_file(ws / "waiting")
        (ws / "go").touch()

    releasing = asyncio.create_task(release())
    command = "echo yes > waiting; until [ -e go ]; do sleep 0.01; done; echo released"
    result = await bash(ctx, command, limit=60)
    await releasing
    assert not result.is_error and result.output == "released\n"


async def test_flooding_output_is_capped_with_marker(ctx: ToolContext) -> None:
    result = await bash(ctx, "seq 1 400000")
    assert not result.is_error
    assert len(result.output) <= OUTPUT_CAP
    assert result.output.startswith("1\n2\n3\n")
    assert result.output.rstrip().endswith("399999\n400000")
    assert "truncated" in result.output


async def test_endless_flood_times_out_with_bounded_output(ctx: ToolContext) -> None:
    result = await bash(ctx, "yes", limit=1)
    assert result.is_error and "timed out after 1 s" in result.output
    assert len(result.output) <= OUTPUT_CAP
    assert "truncated" in result.output


def test_output_buffer_memory_stays_bounded() -> None:
    buffer = OutputBuffer(head_size=100, tail_size=50)
    chunk = b"y\n" * 32_768
    for _ in range(1_000):  # 64 MB in all
        buffer.feed(chunk)
        assert len(buffer.head) <= 100 and len(buffer.tail) <= 50
    assert buffer.dropped == 1_000 * len(chunk) - 150
    text = buffer.text()
    assert f"truncated {buffer.dropped} bytes" in text and len(text) < 250


def test_output_buffer_keeps_short_output_whole() -> None:
    buffer = OutputBuffer(head_size=10, tail_size=10)
    buffer.feed(b"0123456789abc")
    buffer.feed(b"def")
    assert buffer.text() == "0123456789abcdef"


async def test_background_process_holding_output_is_stopped_after_exit(
    ctx: ToolContext, ws: Path
) -> None:
    result = await bash(ctx, f"{SLEEPER}; echo launched")
    assert result.output.startswith("launched\n")
    # The sleeper's subshell, and its sleep unless the exit came before the subshell forked it.
    stopped = re.search(r"\[(\d+) background process\(es\)", result.output)
    assert stopped is not None and stopped.group(1) in ("1", "2"), result.output
    await sleeper_killed(ws)


async def test_background_process_with_redirected_output_is_stopped_too(
    ctx: ToolContext, ws: Path
) -> None:
    result = await bash(ctx, "sleep 30 > /dev/null 2>&1 & echo $! > child.pid")
    assert not result.is_error and "were stopped" in result.output
    await wait_dead(int((ws / "child.pid").read_text()))


async def test_setsid_background_process_does_not_survive_the_command(
    ctx: ToolContext, ws: Path
) -> None:
    """Issue 7, bug 5: ``setsid`` escaped the process-group kill and the result lied."""
    result = await bash(ctx, "setsid sleep 1000 > /dev/null 2>&1 & echo $! > child.pid")
    assert "were stopped" in result.output
    await wait_dead(int((ws / "child.pid").read_text()))


async def test_double_forked_daemon_does_not_survive_the_command(
    ctx: ToolContext, ws: Path
) -> None:
    command = (
        "( setsid sh -c 'echo $$ > child.pid; exec sleep 1000' > /dev/null 2>&1 & ) ; "
        "until [ -s child.pid ]; do sleep 0.01; done"
    )
    await bash(ctx, command)
    await wait_dead(int(await wait_for_file(ws / "child.pid")))


async def test_cancel_stops_setsid_grandchild(ctx: ToolContext, ws: Path) -> None:
    task = asyncio.create_task(
        bash(ctx, "setsid sleep 1000 > /dev/null 2>&1 & echo $! > child.pid; wait")
    )
    child = int(await wait_for_file(ws / "child.pid"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_dead(child)


async def test_the_api_key_is_not_in_the_command_environment(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-1")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret-2")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    policy = ShellPolicy(env=tool_env())
    result = await bash(replace(ctx, shell=policy), "env; cat /proc/self/environ | tr '\\0' '\\n'")
    assert "sk-ant-secret-1" not in result.output and "ghp-secret-2" not in result.output
    assert "HARMLESS_SETTING=visible" in result.output


async def test_default_context_scrubs_secrets_too(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok-secret-3")
    result = await bash(ctx, "env")
    assert "tok-secret-3" not in result.output


async def test_live_output_gets_chunks_before_the_command_ends(ctx: ToolContext) -> None:
    seen: list[str] = []
    arrived = asyncio.Event()

    def listener(text: str) -> None:
        seen.append(text)
        arrived.set()

    live = LiveOutput(listener)
    task = asyncio.create_task(bash(replace(ctx, live=live), "echo first; sleep 30"))
    await asyncio.wait_for(arrived.wait(), 10)
    assert "".join(seen) == "first\n" and not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert live.text() == "first\n"  # an interrupted call keeps its partial output


def test_live_output_decodes_utf8_split_across_chunks() -> None:
    seen: list[str] = []
    live = LiveOutput(seen.append)
    data = "héllo".encode()
    live.feed(data[:2])
    live.feed(data[2:])
    assert "".join(seen) == "héllo" and live.text() == "héllo"


async def test_sandbox_always_without_bwrap_refuses_approved_commands(
    ctx: ToolContext, ws: Path
) -> None:
    policy = ShellPolicy(setting="always", backend="none")
    result = await bash(replace(ctx, shell=policy), "touch made")
    assert result.is_error and "bubblewrap" in result.output
    assert not (ws / "made").exists()


async def test_server_killed_takes_running_command_down(tmp_path: Path, ws: Path) -> None:
    """Issue 7, bug 5: after kill -9 of the server, commands ran on and did their side effects."""
    marker = sleep_marker()
    script = tmp_path / "server.py"
    script.write_text(
        "import asyncio, pathlib, sys\n"
        "from tiller.tools.shell import run_command\n"
        "ws = pathlib.Path(sys.argv[1])\n"
        "asyncio.run(run_command("
        f'\'setsid sh -c "sleep {marker}; touch bg-marker" > /dev/null 2>&1 & '
        f"sleep {marker}; touch marker', ws, 60))\n"
    )
    server = await asyncio.create_subprocess_exec(sys.executable, str(script), str(ws))
    await until(lambda: len(host_pids("sleep", marker)) == 2)
    server.kill()
    await server.wait()
    # Every process of the command is gone (a shell that outlived its sleep would have done
    # its side effect before it went): nothing is left to do one.
    await until(lambda: not processes_with(marker))
    assert not (ws / "marker").exists()
    assert not (ws / "bg-marker").exists()


# --- approved commands in a PID namespace of their own (bubblewrap) --------------------------

needs_bwrap = pytest.mark.skipif(not bwrap_works(), reason="bubblewrap does not work here")


@pytest.fixture
def isolated(ctx: ToolContext) -> ToolContext:
    """Approved commands where bubblewrap works and the setting is ``auto``."""
    policy = ShellPolicy(setting="auto", backend="bwrap")
    assert policy.confinement(asked=True) == Isolated()
    return replace(ctx, shell=policy)


@needs_bwrap
async def test_approved_command_runs_under_its_supervisor_in_its_own_pid_namespace(
    isolated: ToolContext,
) -> None:
    result = await bash(isolated, "echo $$ $PPID; ps -ww -o args= -p $PPID; ps -e -o pid= | wc -l")
    pids, parent, count = result.output.splitlines()
    assert pids == "3 2"  # bwrap's init is 1, the supervisor 2
    assert "supervisor.py" in parent
    assert int(count) == 5  # init, supervisor, bash, ps, wc: nothing from outside


@needs_bwrap
async def test_approved_command_reports_and_stops_its_background_process(
    isolated: ToolContext,
) -> None:
    marker = sleep_marker()
    result = await bash(isolated, f"setsid sleep {marker} > /dev/null 2>&1 & echo launched")
    assert result.output.startswith("launched\n")
    assert "1 background process(es) the command left running were stopped" in result.output
    assert host_pids("sleep", marker) == []


@needs_bwrap
async def test_approved_command_double_forked_daemon_does_not_survive(
    isolated: ToolContext,
) -> None:
    marker = sleep_marker()
    command = (
        f"( setsid sh -c 'exec sleep {marker}' > /dev/null 2>&1 & ) ; "
        f"until ps -e -o args= | grep -qx 'sleep {marker}'; do sleep 0.01; done; echo seen"
    )
    result = await bash(isolated, command)
    assert result.output.startswith("seen\n") and "were stopped" in result.output
    assert host_pids("sleep", marker) == []


@needs_bwrap
async def test_cancelling_an_approved_command_stops_all_its_processes(
    isolated: ToolContext,
) -> None:
    marker = sleep_marker()
    task = asyncio.create_task(
        bash(isolated, f"trap '' TERM; setsid sleep {marker} > /dev/null 2>&1 & sleep {marker}")
    )
    await until(lambda: len(host_pids("sleep", marker)) == 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await until(lambda: host_pids("sleep", marker) == [])


@needs_bwrap
async def test_approved_command_timeout_stops_all_its_processes(isolated: ToolContext) -> None:
    marker = sleep_marker()
    command = f"trap '' TERM; setsid sleep {marker} > /dev/null 2>&1 & echo started; sleep {marker}"
    # 3 s: a sandbox and its shell can take over a second to print under CI's load.
    result = await bash(isolated, command, limit=3)
    assert result.is_error and "timed out after 3 s" in result.output
    assert "started" in result.output
    await until(lambda: host_pids("sleep", marker) == [])


@needs_bwrap
async def test_approved_command_dies_with_the_server(tmp_path: Path, ws: Path) -> None:
    marker = sleep_marker()
    script = tmp_path / "server.py"
    script.write_text(
        "import asyncio, pathlib, sys\n"
        "from tiller.workspace.sandbox import Isolated\n"
        "from tiller.tools.shell import run_command\n"
        "ws = pathlib.Path(sys.argv[1])\n"
        f"asyncio.run(run_command('setsid sleep {marker} & sleep {marker}', ws, 60,"
        " confinement=Isolated()))\n"
    )
    server = await asyncio.create_subprocess_exec(sys.executable, str(script), str(ws))
    await until(lambda: len(host_pids("sleep", marker)) == 2)
    server.kill()
    await server.wait()
    await until(lambda: host_pids("sleep", marker) == [])


@needs_bwrap
async def test_approved_command_gets_the_scrubbed_environment_and_changes_files(
    isolated: ToolContext, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-4")
    policy = replace(isolated.shell, env=tool_env())
    result = await bash(replace(isolated, shell=policy), "env > env.txt; echo made > made.txt")
    assert not result.is_error
    assert "sk-ant-secret-4" not in (ws / "env.txt").read_text()
    assert (ws / "made.txt").read_text() == "made\n"
