"""The terminal client end to end: `tiller run` as a subprocess, the real server behind it.

Fixtures ``api`` (the fake, key "test-key") and ``workspace`` come from conftest.py.

Model answers come from the bundled demo script or from the fake Messages API (the real SDK
over HTTP). stdin is /dev/null (no terminal) unless a test gives it a pseudo-terminal.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from fakeapi import FakeMessagesAPI
from processes import processes_with, until

CLI = [sys.executable, "-m", "tiller.faces.cli", "run"]
RUN_TIMEOUT = 60.0


def tool_use(name: str, tool_id: str, **tool_input: object) -> dict[str, object]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def text(value: str) -> dict[str, object]:
    return {"type": "text", "text": value}


def cli_env(data_dir: Path, api_key: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "TILLER_"))}
    env["TILLER_DATA_DIR"] = str(data_dir)
    env["PYTHONUNBUFFERED"] = "1"
    if api_key is not None:
        env["ANTHROPIC_API_KEY"] = api_key
    return env


class CliProcess:
    """A running `tiller run`, its output collected as it arrives."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.stdout = ""
        self.stderr = ""
        self._changed = asyncio.Event()
        assert process.stdout is not None and process.stderr is not None
        self._readers = [
            asyncio.create_task(self._collect(process.stdout, "stdout")),
            asyncio.create_task(self._collect(process.stderr, "stderr")),
        ]

    async def _collect(self, stream: asyncio.StreamReader, name: str) -> None:
        while data := await stream.read(4096):
            setattr(self, name, getattr(self, name) + data.decode(errors="replace"))
            self._changed.set()

    async def wait_output(self, needle: str, stream: str = "stdout", timeout: float = 30) -> None:
        async def waiting() -> None:
            while needle not in getattr(self, stream):
                if self.process.returncode is not None:
                    raise AssertionError(f"exited before {needle!r}:\n{self.report()}")
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), 0.2)

        try:
            await asyncio.wait_for(waiting(), timeout)
        except TimeoutError:
            raise AssertionError(f"no {needle!r} within {timeout}s:\n{self.report()}") from None

    async def wait(self, timeout: float = RUN_TIMEOUT) -> int:
        try:
            code = await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
            raise AssertionError(f"still running after {timeout}s:\n{self.report()}") from None
        await asyncio.gather(*self._readers)
        return code

    def report(self) -> str:
        return f"--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


@pytest_asyncio.fixture
async def start_cli(workspace: Path, tmp_path: Path) -> AsyncIterator[Any]:
    """Start `tiller run ARGS...` in the workspace; killed after the test if still running."""
    started: list[CliProcess] = []

    async def start(
        *args: str, api: FakeMessagesAPI | None = None, stdin: Any = None
    ) -> CliProcess:
        argv = [*CLI, "--workspace", str(workspace)]
        if api is not None:
            argv += ["--base-url", api.base_url, "--model", "claude-test-1"]
        process = await asyncio.create_subprocess_exec(
            *argv,
            *args,
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=cli_env(tmp_path / "data", "test-key" if api is not None else None),
            cwd=workspace,
        )
        cli = CliProcess(process)
        started.append(cli)
        return cli

    yield start
    for cli in started:
        if cli.process.returncode is None:
            cli.process.kill()
            await cli.process.wait()


# --- the offline demo ---------------------------------------------------------------------


def test_demo_with_yes_writes_edits_and_runs_hello(workspace: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [*CLI, "--demo", "--yes", "--workspace", str(workspace), "show", "me"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=cli_env(tmp_path / "data"),
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for line in (
        "✓ list_files",
        "✓ write_file tiller-demo/hello.py",
        "✓ read_file tiller-demo/hello.py",
        "✓ edit_file tiller-demo/hello.py",
        "✓ bash python3 tiller-demo/hello.py",
        "✓ bash ls tiller-demo",
    ):
        assert line in out, out
    assert "✗" not in out
    assert re.search(r"✓ write_file tiller-demo/hello.py \(\d+ ms\)", out)
    hello = workspace / "tiller-demo" / "hello.py"
    assert 'greet("Tiller user")' in hello.read_text()
    run = subprocess.run(
        [sys.executable, str(hello)], capture_output=True, text=True, check=True, timeout=30
    )
    assert run.stdout == "Hello, Tiller user!\n"


def test_demo_without_workspace_runs_in_a_fresh_temp_dir(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = subprocess.run(
        [*CLI, "--demo", "--yes", "go"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=cli_env(tmp_path / "data"),
        cwd=cwd,
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    match = re.search(r"demo workspace: (\S+)", done.stderr)
    assert match, done.stderr
    demo_dir = Path(match.group(1).strip())
    try:
        assert "✓ write_file tiller-demo/hello.py" in done.stdout
        assert list(cwd.iterdir()) == []
        assert str(demo_dir) not in done.stdout
        assert "removed on exit" in done.stderr
        assert not demo_dir.exists()  # every demo used to leave /tmp/tiller-demo-XXXX behind
        # Issue 36: the last line said to delete a folder the client was about to delete.
        assert "Delete" not in done.stdout and "whenever you like" not in done.stdout
        assert done.stdout.rstrip().endswith("It is all in the `tiller-demo` folder.")
        assert done.stderr.rstrip().endswith(f"· removed the demo workspace {demo_dir}")
    finally:
        shutil.rmtree(demo_dir, ignore_errors=True)


def test_demo_run_again_in_the_same_workspace_does_not_recreate_hello(
    workspace: Path, tmp_path: Path
) -> None:
    def demo() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CLI, "--demo", "--yes", "--workspace", str(workspace), "show", "me"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=cli_env(tmp_path / "data"),
            timeout=RUN_TIMEOUT,
        )

    first = demo()
    assert first.returncode == 0, first.stdout + first.stderr
    hello = workspace / "tiller-demo" / "hello.py"
    written = hello.read_text()
    again = demo()
    assert again.returncode == 0, again.stdout + again.stderr
    assert "write_file" not in again.stdout and "edit_file" not in again.stdout
    assert "nothing to write or edit" in again.stdout
    assert "Hello, Tiller user!" in again.stdout
    assert hello.read_text() == written


def test_demo_plan_without_a_terminal_exits_2_and_says_to_use_yes(
    workspace: Path, tmp_path: Path
) -> None:
    done = subprocess.run(
        [*CLI, "--demo", "--mode", "plan", "--workspace", str(workspace), "show", "me"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=cli_env(tmp_path / "data"),
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 2, done.stdout + done.stderr  # was 0 ("plan rejected")
    assert "no terminal to approve on" in done.stderr and "--yes" in done.stderr
    assert not (workspace / "tiller-demo").exists()


def test_usage_errors_exit_64(tmp_path: Path, workspace: Path) -> None:
    for args in (
        [],
        ["--mode", "yolo", "hi"],
        ["--workspace", str(tmp_path / "missing"), "hi"],
        ["--demo", "--script", str(tmp_path / "x.json"), "hi"],
        ["--script", str(tmp_path / "missing.json"), "hi"],
    ):
        done = subprocess.run(
            [*CLI, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=cli_env(tmp_path / "data"),
            cwd=workspace,
            timeout=RUN_TIMEOUT,
        )
        assert done.returncode == 64, (args, done.stderr)
        assert done.stdout == ""
        assert "error" in done.stderr


# --- against the fake Messages API --------------------------------------------------------


async def test_bash_without_yes_and_without_terminal_is_not_run_nor_blamed_on_the_user(
    api: FakeMessagesAPI, start_cli: Any, workspace: Path
) -> None:
    """Issue 36: "Denied by the user. Their feedback: no terminal to confirm on" blamed a user
    who did nothing. Nobody could be asked: the user reads what to do, the model that the user
    did not refuse it."""
    api.enqueue(
        {
            "content": [
                text("Creating a marker.\n"),
                tool_use("bash", "toolu_b1", command="touch m"),
            ]
        },
        {"content": [text("The command was denied.")]},
    )
    cli = await start_cli("make a marker", api=api)
    code = await cli.wait()
    assert code == 0, cli.report()
    assert "Creating a marker." in cli.stdout
    assert "… bash touch m" in cli.stdout
    assert "✗ bash touch m: " in cli.stdout
    assert "The command was denied." in cli.stdout
    assert (
        "· not run: bash touch m needs permission and there is no terminal to ask on "
        "(use --yes, or an allow rule)" in cli.stderr
    ), cli.report()
    assert "denied" not in cli.stderr
    assert not (workspace / "m").exists()
    result = api.message_requests()[1].body["messages"][-1]["content"][0]
    assert result["tool_use_id"] == "toolu_b1" and result["is_error"] is True
    told = str(result["content"])
    assert told.startswith("Not run: nobody could be asked for permission"), told
    assert "the user did not refuse it" in told and "Denied by the user" not in told
    assert api.message_requests()[0].api_key == "test-key"


async def test_plan_mode_denies_write_file(
    api: FakeMessagesAPI, start_cli: Any, workspace: Path
) -> None:
    api.enqueue(
        {"content": [tool_use("write_file", "toolu_w1", path="new.txt", content="x\n")]},
        {"content": [tool_use("exit_plan_mode", "toolu_x1", plan="Plan: 1. write new.txt")]},
    )
    cli = await start_cli("--mode", "plan", "write new.txt", api=api)
    code = await cli.wait()
    assert code == 2, cli.report()  # stopped: nobody could approve the plan
    assert "no terminal to approve on (use --yes)" in cli.stderr
    assert "✗ write_file new.txt: " in cli.stdout
    assert not (workspace / "new.txt").exists()
    # No terminal to approve the plan on: rejected, and the turn ends there.
    assert "plan:\nPlan: 1. write new.txt" in cli.stdout
    assert "plan rejected" in cli.stdout
    assert len(api.message_requests()) == 2


async def test_sigint_interrupts_a_running_command(api: FakeMessagesAPI, start_cli: Any) -> None:
    marker = f"tiller-cli-sleep-{uuid.uuid4().hex[:8]}"
    api.enqueue(
        {
            "content": [
                text("Waiting.\n"),
                tool_use("bash", "toolu_s1", command=f"exec -a {marker} sleep 30"),
            ]
        },
    )
    cli = await start_cli("--yes", "wait a while", api=api)
    await cli.wait_output("… bash exec -a")
    await until(lambda: processes_with(marker), within=10, report=cli.report)

    cli.process.send_signal(signal.SIGINT)
    code = await cli.wait(timeout=15)  # the command sleeps 30 s: it was stopped, not awaited
    assert code == 130, cli.report()
    assert "interrupted" in cli.stdout
    assert "✗ bash exec -a" in cli.stdout
    assert cli.stdout.rstrip().endswith("bash ✗")
    assert processes_with(marker) == []


async def test_an_interrupted_command_with_blank_output_shows_no_empty_partial_header(
    api: FakeMessagesAPI, start_cli: Any, workspace: Path
) -> None:
    command = "printf '\\n  \\n'; touch started; exec sleep 30"
    api.enqueue({"content": [tool_use("bash", "toolu_p1", command=command)]})
    cli = await start_cli("--yes", "wait", api=api)
    await cli.wait_output("… bash printf")
    await until((workspace / "started").exists, report=cli.report)
    cli.process.send_signal(signal.SIGINT)
    code = await cli.wait()
    assert code == 130, cli.report()
    assert "✗ bash printf" in cli.stdout
    assert "partial output before the interrupt" not in cli.stdout + cli.stderr, cli.report()


async def test_second_sigint_quits_at_once(api: FakeMessagesAPI, start_cli: Any) -> None:
    marker = f"tiller-cli-stubborn-{uuid.uuid4().hex[:8]}"
    api.enqueue(
        {"content": [tool_use("bash", "toolu_s2", command=f"exec -a {marker} sleep 30")]},
    )
    cli = await start_cli("--yes", "wait", api=api)
    await cli.wait_output("… bash exec -a")
    cli.process.send_signal(signal.SIGINT)
    await cli.wait_output("interrupting", "stderr")
    cli.process.send_signal(signal.SIGINT)
    code = await cli.wait(timeout=10)
    assert code == 130, cli.report()
    await until(lambda: not processes_with(marker), within=10)  # it did not outlive the client


async def test_failed_turn_exits_1_with_the_error_kind(
    api: FakeMessagesAPI, start_cli: Any
) -> None:
    api.enqueue(
        {"error": {"status": 401, "type": "authentication_error", "message": "invalid x-api-key"}}
    )
    cli = await start_cli("hello", api=api)
    code = await cli.wait()
    assert code == 1, cli.report()
    assert "error (auth): " in cli.stderr
    assert "failed" in cli.stdout


async def test_a_reader_that_goes_away_ends_the_output_not_the_turn(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    """``tiller run ... | head -1``: once the reader is gone the rest of the answer goes
    nowhere, quietly. The turn ends as it would have (exit 0), with no traceback per line
    on stderr (there was one for each text delta, and the run could hang)."""
    line = "a line of the answer, long enough to fill the pipe soon\n"
    api.enqueue({"content": [text(line * 4000)]})  # ~220 KB: more than a pipe holds
    read_end, write_end = os.pipe()
    process = await asyncio.create_subprocess_exec(
        *CLI, "--workspace", str(workspace), "--base-url", api.base_url, "--model",
        "claude-test-1", "--yes", "hello",
        stdin=subprocess.DEVNULL, stdout=write_end, stderr=subprocess.PIPE,
        env=cli_env(tmp_path / "data", "test-key"), cwd=workspace,
    )  # fmt: skip
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        first = await asyncio.to_thread(reader.readline)
    assert first  # the reader read a line, and is gone
    _, err = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT)
    assert process.returncode == 0, err.decode()
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()
    assert len(api.message_requests()) == 1


async def test_refused_key_fails_at_once_saying_the_key_was_refused(
    api: FakeMessagesAPI, start_cli: Any
) -> None:
    api.enqueue(
        {"error": {"status": 401, "type": "authentication_error", "message": "invalid x-api-key"}}
    )
    cli = await start_cli("hello", api=api)
    code = await cli.wait()
    assert code == 1, cli.report()
    assert "refused the key" in cli.stderr and "ANTHROPIC_API_KEY" in cli.stderr, cli.report()
    assert "retrying" not in cli.stderr
    assert [r.status for r in api.requests if r.path == "/v1/messages"] == [401]


async def test_missing_key_fails_at_once_naming_the_variable_and_the_demo(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    done = await asyncio.create_subprocess_exec(
        *CLI, "--workspace", str(workspace), "--base-url", api.base_url, "hello",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(tmp_path / "data"),  # no ANTHROPIC_API_KEY, no ANTHROPIC_AUTH_TOKEN
    )  # fmt: skip
    out, err = await asyncio.wait_for(done.communicate(), RUN_TIMEOUT)
    stderr = err.decode()
    assert done.returncode == 1, out.decode() + stderr
    assert "ANTHROPIC_API_KEY" in stderr and "ANTHROPIC_AUTH_TOKEN" in stderr, stderr
    assert "--demo" in stderr
    assert "retrying" not in stderr and "busy or unreachable" not in stderr
    assert api.requests == []  # nothing was sent without a key


async def test_retries_of_an_overloaded_api_show_one_notice_per_kind(
    api: FakeMessagesAPI, start_cli: Any
) -> None:
    overloaded = {
        "error": {"status": 529, "type": "overloaded_error", "message": "busy", "retryAfter": "0"}
    }
    api.enqueue(*[overloaded] * 9)  # 3 attempts of the step, each retried twice by the SDK
    cli = await start_cli("hello", api=api)
    code = await cli.wait()
    assert code == 1, cli.report()
    assert [r.status for r in api.requests if r.path == "/v1/messages"] == [529] * 9
    notices = [line for line in cli.stderr.splitlines() if "retrying" in line]
    assert len(notices) == 2, cli.report()  # the SDK's retry, the step's retry: once each
    assert "error (overloaded)" in cli.stderr


async def test_checkpoint_without_terminal_stops_with_exit_2(
    api: FakeMessagesAPI, start_cli: Any, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("a\n")
    api.enqueue(
        {"content": [tool_use("read_file", "toolu_c1", path="a.txt")]},
        {"content": [tool_use("read_file", "toolu_c2", path="a.txt")]},
        {"content": [text("never reached")]},
    )
    cli = await start_cli("--tool-budget", "1", "read twice", api=api)
    code = await cli.wait()
    assert code == 2, cli.report()
    assert "checkpoint: 1 tool calls so far: read_file ✓" in cli.stdout
    assert "stopped" in cli.stdout
    assert "never reached" not in cli.stdout


async def test_slash_help_is_answered_by_the_server(api: FakeMessagesAPI, start_cli: Any) -> None:
    cli = await start_cli("/help", api=api)
    code = await cli.wait()
    assert code == 0, cli.report()
    assert "/mode" in cli.stdout
    assert api.message_requests() == []


# --- on a terminal ------------------------------------------------------------------------


@pytest_asyncio.fixture
async def terminal() -> AsyncIterator[tuple[int, int]]:
    """A pseudo-terminal for the client's stdin: (master, slave)."""
    master, slave = pty.openpty()
    yield master, slave
    for fd in (master, slave):
        with contextlib.suppress(OSError):
            os.close(fd)


async def test_terminal_user_allows_a_command(
    api: FakeMessagesAPI, start_cli: Any, workspace: Path, terminal: tuple[int, int]
) -> None:
    master, slave = terminal
    api.enqueue(
        {"content": [tool_use("bash", "toolu_t1", command="touch allowed.txt")]},
        {"content": [text("Made it.")]},
    )
    cli = await start_cli("make a file", api=api, stdin=slave)
    await cli.wait_output("[y] yes", "stderr")
    assert "$ touch allowed.txt" in cli.stderr
    os.write(master, b"y\n")
    code = await cli.wait()
    assert code == 0, cli.report()
    assert "✓ bash touch allowed.txt" in cli.stdout
    assert (workspace / "allowed.txt").exists()


async def test_terminal_user_denies_an_edit_with_feedback(
    api: FakeMessagesAPI, start_cli: Any, workspace: Path, terminal: tuple[int, int]
) -> None:
    master, slave = terminal
    api.enqueue(
        {"content": [tool_use("write_file", "toolu_t2", path="notes.md", content="hello\n")]},
        {"content": [text("Understood.")]},
    )
    cli = await start_cli("write notes", api=api, stdin=slave)
    await cli.wait_output("[y] yes", "stderr")
    assert "+++ b/notes.md" in cli.stderr and "+hello" in cli.stderr
    os.write(master, b"n call it README.md instead\n")
    code = await cli.wait()
    assert code == 0, cli.report()
    assert "✗ write_file notes.md" in cli.stdout
    assert not (workspace / "notes.md").exists()
    result = api.message_requests()[1].body["messages"][-1]["content"][0]
    assert result["is_error"] is True
    assert "call it README.md instead" in str(result["content"])


async def test_terminal_checkpoint_takes_the_chats_keys_c_to_continue(
    api: FakeMessagesAPI, start_cli: Any, workspace: Path, terminal: tuple[int, int]
) -> None:
    master, slave = terminal
    (workspace / "a.txt").write_text("a\n")
    api.enqueue(
        {"content": [tool_use("read_file", "toolu_t4", path="a.txt")]},
        {"content": [tool_use("read_file", "toolu_t5", path="a.txt")]},
        {"content": [text("Read it twice.")]},
    )
    cli = await start_cli("--tool-budget", "1", "read twice", api=api, stdin=slave)
    await cli.wait_output("[c] continue", "stderr")
    os.write(master, b"y\n")  # the confirmation's key: not an answer here
    await cli.wait_output("Please answer c or s.", "stderr")
    os.write(master, b"c\n")
    code = await cli.wait()
    assert code == 0, cli.report()
    assert "Read it twice." in cli.stdout


async def test_interrupt_withdraws_a_pending_question(
    api: FakeMessagesAPI, start_cli: Any, terminal: tuple[int, int]
) -> None:
    _, slave = terminal
    api.enqueue({"content": [tool_use("bash", "toolu_t3", command="touch never.txt")]})
    cli = await start_cli("make a file", api=api, stdin=slave)
    await cli.wait_output("[y] yes", "stderr")
    cli.process.send_signal(signal.SIGINT)
    code = await cli.wait(timeout=15)
    assert code == 130, cli.report()
    assert "withdrawn" in cli.stderr
    assert "interrupted" in cli.stdout


# --- `tiller chat` without a terminal -----------------------------------------------------


async def test_chat_without_a_terminal_runs_each_line_as_tiller_run_would(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    api.enqueue(
        {"content": [text("First answer.\n"), tool_use("read_file", "toolu_n1", path="a.txt")]},
        {"content": [text("Read it.")]},
        {"content": [text("Second answer.")]},
    )
    (workspace / "a.txt").write_text("a\n")
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "tiller.faces.cli", "chat", "--workspace", str(workspace)],
        *["--base-url", api.base_url, "--model", "claude-test-1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(tmp_path / "data", "test-key"),
    )
    out, err = await asyncio.wait_for(
        process.communicate(b"read a.txt\n\n/help\nagain\n"), RUN_TIMEOUT
    )
    stdout = out.decode()
    assert process.returncode == 0, stdout + err.decode()
    assert "First answer.\n" in stdout
    assert "✓ read_file a.txt" in stdout
    assert "Read it." in stdout
    assert "/mode" in stdout  # the server's /help
    assert stdout.rstrip().endswith("Second answer.")
    assert "\x1b[" not in stdout
    requests = api.message_requests()
    assert len(requests) == 3
    assert len(requests[2].body["messages"]) == 5  # the same session: one history


async def test_piped_chat_hints_at_what_it_accepts_not_at_yes(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    api.enqueue(
        {"content": [tool_use("bash", "toolu_n2", command="touch m")]},
        {"content": [text("Denied.")]},
    )
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "tiller.faces.cli", "chat", "--workspace", str(workspace)],
        *["--base-url", api.base_url, "--model", "claude-test-1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(tmp_path / "data", "test-key"),
    )
    out, err = await asyncio.wait_for(process.communicate(b"make m\n"), RUN_TIMEOUT)
    stderr = err.decode()
    assert process.returncode == 0, out.decode() + stderr
    assert "needs permission and there is no terminal to ask on" in stderr
    assert "use --yes" not in stderr  # `tiller chat` has no --yes
    assert "tiller run --yes" in stderr
    assert not (workspace / "m").exists()


async def test_interrupt_during_a_question_logs_no_unknown_message_id_warning(
    api: FakeMessagesAPI, start_cli: Any, terminal: tuple[int, int]
) -> None:
    """The client answers the request the server cancelled; that late answer is expected."""
    _, slave = terminal
    api.enqueue({"content": [tool_use("bash", "toolu_t6", command="touch never.txt")]})
    cli = await start_cli("make a file", api=api, stdin=slave)
    await cli.wait_output("[y] yes", "stderr")
    cli.process.send_signal(signal.SIGINT)
    code = await cli.wait(timeout=15)
    assert code == 130, cli.report()
    assert "withdrawn" in cli.stderr
    assert "unknown message id" not in cli.stderr, cli.report()
    assert "WARNING" not in cli.stderr, cli.report()


# --- attachments: --image and @path (issue 22) -----------------------------------------------

PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAA"
    "AABJRU5ErkJggg=="
)


async def test_run_attaches_an_image_by_path_and_at_mentions(
    start_cli: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('hello')\n")
    (workspace / "shot.png").write_bytes(PNG_1PX)
    outside = tmp_path / "photo.png"
    outside.write_bytes(PNG_1PX)
    api.enqueue({"content": [text("Seen.")]})
    cli = await start_cli(
        "--image", str(outside), "compare @shot.png with @src/app.py, ask @someone", api=api
    )
    assert await cli.wait() == 0, cli.report()
    [request] = api.message_requests()
    blocks = request.body["messages"][0]["content"]
    assert [b["type"] for b in blocks] == ["image", "image", "text", "text"]
    assert blocks[0]["source"]["data"] == base64.b64encode(PNG_1PX).decode()
    assert blocks[2]["text"].startswith('<context kind="file" name="src/app.py">')
    assert blocks[3]["text"] == "compare @shot.png with @src/app.py, ask @someone"
    # Issue 36: what was attached is echoed, as the chat echoes it
    assert f"+ image {outside} · image shot.png · @src/app.py\n" in cli.stdout, cli.report()


async def test_an_image_that_is_not_one_is_a_usage_error_naming_it(
    start_cli: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("plain words\n")
    cli = await start_cli("--image", str(workspace / "notes.txt"), "look", api=api)
    assert await cli.wait() == 64, cli.report()
    assert "notes.txt: not a PNG, JPEG, GIF or WebP image" in cli.stderr + cli.stdout
    assert api.message_requests() == []


# --- issue 36: what `tiller run` shows ------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "chat", "acp", "connect", "trust"])
def test_an_unknown_option_shows_the_usage_of_its_command(command: str, tmp_path: Path) -> None:
    """`tiller run --bogus` printed the top-level usage instead of run's."""
    done = subprocess.run(
        [sys.executable, "-m", "tiller.faces.cli", command, "--bogus"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=cli_env(tmp_path / "data"),
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 64, done.stderr
    assert done.stderr.startswith(f"usage: tiller {command} "), done.stderr
    assert done.stderr.endswith(f"tiller {command}: error: unrecognized arguments: --bogus\n")
    assert done.stdout == ""


async def test_a_skill_row_names_the_skill(
    api: FakeMessagesAPI, start_cli: Any, workspace: Path
) -> None:
    skill = workspace / ".claude" / "skills" / "release" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\ndescription: how to cut a release\n---\nTag it, then push.\n")
    load = {"type": "tool_use", "id": "toolu_k1", "name": "skill", "input": {"name": "release"}}
    api.enqueue({"content": [load]}, {"content": [text("Loaded.")]})
    cli = await start_cli("cut a release", api=api)
    assert await cli.wait() == 0, cli.report()
    assert "… skill release" in cli.stdout, cli.report()
    assert re.search(r"✓ skill release \(\d+ ms\)", cli.stdout), cli.report()


async def test_a_blocked_mcp_server_is_told_once_on_stderr(
    api: FakeMessagesAPI, start_cli: Any, workspace: Path
) -> None:
    """Issue 36: `tiller run` gave no notice that a checked-in `.mcp.json` server is blocked."""
    (workspace / ".mcp.json").write_text('{"mcpServers": {"clock": {"command": "clock-mcp"}}}')
    api.enqueue(
        {"content": [tool_use("tool_search", "toolu_q1", query="clock")]},
        {"content": [text("No clock.")]},
    )
    cli = await start_cli("--trust", "what time is it", api=api)
    assert await cli.wait() == 0, cli.report()
    told = [line for line in cli.stderr.splitlines() if "'clock'" in line]
    assert len(told) == 1, cli.report()
    assert told[0].startswith("· MCP configuration: server 'clock' of ") and ".mcp.json" in told[0]
    assert "enabledMcpjsonServers" in told[0]
    assert "'clock'" not in cli.stdout


def web_env(tmp_path: Path, api_key: str) -> dict[str, str]:
    """``tiller run``'s environment with a home of its own, whose settings file the test
    writes (``~/.config/tiller/settings.json``, as the issue has it)."""
    env = cli_env(tmp_path / "data", api_key)
    env.pop("XDG_CONFIG_HOME", None)
    env["HOME"] = str(tmp_path / "home")
    return env


async def run_with_env(argv: list[str], env: dict[str, str], cwd: Path) -> CliProcess:
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    return CliProcess(process)


def web_tools_sent(api: FakeMessagesAPI) -> list[str]:
    (sent, *_) = api.message_requests()
    return [str(t["name"]) for t in sent.body["tools"] if "type" in t]


async def test_web_search_in_the_users_settings_file_reaches_the_model(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "home" / ".config" / "tiller" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"webSearch": {"enabled": true}}')
    api.enqueue({"content": [text("ok")]})
    argv = [*CLI, "--workspace", str(workspace), "--base-url", api.base_url, "hello"]
    cli = await run_with_env(argv, web_env(tmp_path, "test-key"), workspace)
    assert await cli.wait() == 0, cli.report()
    assert web_tools_sent(api) == ["web_search"]


async def test_web_flags_turn_the_tools_on_and_off_for_one_run(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "home" / ".config" / "tiller" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"webSearch": true}')
    api.enqueue({"content": [text("ok")]})
    argv = [*CLI, "--workspace", str(workspace), "--base-url", api.base_url]
    flags = ["--no-web-search", "--web-fetch", "hello"]
    cli = await run_with_env([*argv, *flags], web_env(tmp_path, "test-key"), workspace)
    assert await cli.wait() == 0, cli.report()
    assert web_tools_sent(api) == ["web_fetch"]
