"""`tiller run` as a job of a real shell (bash in tmux): a run forked from the warm template
that asks a question while its job is in the background is stopped, as the kernel stops any
background job that reads its terminal, and asks again once brought back with ``fg``.

The fork runs in a session of its own, so the terminal is not its controlling terminal and the
kernel never stops it: before, it read the terminal from the background and took the lines
typed at the shell."""

from __future__ import annotations

import re
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakeapi import FakeMessagesAPI
from processes import until
from test_chat_tmux import Terminal, chat_env, text, tool_use
from tiller.proc_stat import STATE, TPGID, stat_fields
from warm import suite

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None or shutil.which("bash") is None, reason="needs tmux and bash"
)


def stopped(pid: int) -> bool:
    return stat_fields(pid)[STATE] == b"T"


def in_the_foreground(pid: int) -> bool:
    """Whether the process group ``pid`` leads is its terminal's foreground group."""
    return int(stat_fields(pid)[TPGID]) == pid


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal(f"tiller-test-{uuid.uuid4().hex[:10]}")
    yield term
    term.close()


async def test_a_backgrounded_run_that_asks_is_stopped_until_fg_and_the_shell_keeps_its_lines(
    terminal: Terminal, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    warm = suite()
    await until(warm.connectable, 60)  # the run is forked: the case the kernel cannot stop
    api.enqueue(
        {"content": [tool_use("bash", "toolu_make", command="touch made.txt")]},
        {"content": [text("Made the file.")]},
    )
    env = {**chat_env(tmp_path / "data"), "PS1": "ready$ ", "XDG_RUNTIME_DIR": str(warm.root)}
    terminal.start(["bash", "--norc", "--noprofile", "-i"], env, workspace)
    await terminal.wait("ready$")
    run = [
        sys.executable, "-m", "tiller.faces.cli", "run", "--workspace", str(workspace),
        "--base-url", api.base_url, "--model", "claude-test-1", "make the file",
    ]  # fmt: skip
    terminal.type(" ".join(run) + " &")
    terminal.keys("Enter")
    # The first fork of a template that has only just started can take most of 20 s on a
    # loaded machine (seen: 18 s): a longer bound for it, which a passing run never waits out.
    screen = await terminal.wait("Allow bash touch made.txt?", whole=True, timeout=60)
    found = re.search(r"^\[1\] (\d+)$", screen, re.MULTILINE)  # bash: "[1] PID" of the job
    assert found is not None, screen
    job = int(found.group(1))
    await until(lambda: stopped(job))  # as the kernel stops a background job that reads

    terminal.type("echo shell-$((6 * 7))")  # the shell reads this line, not the run
    terminal.keys("Enter")
    # bash tells of a job's stop before its next prompt: "[1]+  Stopped (tty input) ...".
    screen = await terminal.wait(lambda s: "\nshell-42" in s and "Stopped" in s, whole=True)
    assert screen.index("\nshell-42") < screen.index("Stopped"), screen
    assert not (workspace / "made.txt").exists()

    terminal.type("fg")
    terminal.keys("Enter")
    # Typed before bash gave the job the terminal, the answer would reach the terminal while
    # it is in readline's raw mode: its Enter would not end a line for the job's read. (Under
    # load this failed when the fork, having seen bash's group in the foreground, sent its
    # SIGTTIN only after `fg` had continued the job: stopped again, the job left the answer
    # to the shell, "bash: y: command not found"; see the fork's wait in client/terminal.py.)
    await until(lambda: in_the_foreground(job) and not stopped(job))
    terminal.type("y")
    terminal.keys("Enter")
    await terminal.wait("Made the file.", whole=True)
    assert (workspace / "made.txt").exists()
