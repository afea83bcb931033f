"""Security issue, item 8: without a sandbox, "read-only" git ran the repository's programs.

A repository's ``.git/config`` can name programs that ``git status``, ``git diff`` or
``git log`` run: ``core.fsmonitor``, ``diff.external``, a textconv driver, a clean filter, a
pager. The classifier used to accept these commands, so with ``sandbox: "off"`` (or no
bubblewrap) the repository's code ran without the user's yes. Each attack below is first
shown to work when git runs it directly; through Tiller it is denied in plan mode and asked
(and denied by this client) in default mode, and its program never runs.
"""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_scheduling_and_permissions import results_of
from test_turn_basics import text, tool_use


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        capture_output=True,
        check=True,
    )


def make_repo(workspace: Path) -> None:
    git(workspace, "init", "-q")
    (workspace / "a.txt").write_text("one\n")
    git(workspace, "add", "a.txt")
    git(workspace, "commit", "-qm", "init")


def run_git_directly(workspace: Path, command: str) -> None:
    """The command as a user's terminal runs it: stdout a tty (so a pager starts)."""
    env = {k: v for k, v in os.environ.items() if k != "GIT_PAGER"}
    env.update(PAGER="cat", GIT_OPTIONAL_LOCKS="0")  # never rewrite the index
    main, side = pty.openpty()
    try:
        subprocess.run(
            command.split(),
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=side,
            stderr=side,
            start_new_session=True,
            timeout=30,
            check=False,
        )
    finally:
        os.close(side)
        os.close(main)


def fsmonitor(workspace: Path, program: str) -> None:
    git(workspace, "config", "core.fsmonitor", f"{program}; false")


def diff_external(workspace: Path, program: str) -> None:
    (workspace / "a.txt").write_text("two\n")
    git(workspace, "config", "diff.external", program)


def textconv(workspace: Path, program: str) -> None:
    (workspace / ".gitattributes").write_text("a.txt diff=evil\n")
    (workspace / "a.txt").write_text("two\n")
    git(workspace, "config", "diff.evil.textconv", f"{program}; cat")


def pager(workspace: Path, program: str) -> None:
    git(workspace, "config", "core.pager", f"{program}; cat")


def filter_clean(workspace: Path, program: str) -> None:
    (workspace / ".gitattributes").write_text("a.txt filter=evil\n")
    git(workspace, "config", "filter.evil.clean", f"{program}; cat")
    later = (workspace / "a.txt").stat().st_mtime + 60
    os.utime(workspace / "a.txt", (later, later))  # stat-dirty: status cleans it again


ATTACKS = [
    pytest.param(fsmonitor, "git status", id="fsmonitor_on_git_status"),
    pytest.param(fsmonitor, "git diff", id="fsmonitor_on_git_diff"),
    pytest.param(diff_external, "git diff", id="diff_external"),
    pytest.param(textconv, "git diff", id="textconv"),
    pytest.param(pager, "git log", id="core_pager"),
    pytest.param(filter_clean, "git status", id="filter_clean"),
]


@pytest.mark.parametrize("mode", ["plan", "default"])
@pytest.mark.parametrize(("attack", "command"), ATTACKS)
async def test_repository_program_never_runs_from_read_only_git(
    start: Any,
    api: FakeMessagesAPI,
    workspace: Path,
    tmp_path: Path,
    attack: Any,
    command: str,
    mode: str,
) -> None:
    marker = tmp_path / "marker"
    make_repo(workspace)
    attack(workspace, f"touch {marker}")
    run_git_directly(workspace, command)
    assert marker.exists(), "the attack does not work here: the test proves nothing"
    marker.unlink()

    tiller: Tiller = await start(permissionMode=mode, sandbox="off")
    api.enqueue(
        {"content": [tool_use("bash", "b1", command=command)]},
        {"content": [text("done")]},
    )
    await tiller.run("what changed?")
    assert not marker.exists()
    result = results_of(api, 1)[0]
    assert result["is_error"] is True
    asked = [p for kind, p in tiller.asked if kind == "tiller/confirmTool"]
    if mode == "plan":
        assert asked == []  # denied outright
        assert "plan mode" in str(result["content"])
    else:
        assert [p["preview"]["command"] for p in asked] == [command]  # asked; the client said no


@pytest.mark.parametrize("mode", ["plan", "default"])
async def test_plain_repository_git_status_runs_without_asking(
    start: Any, api: FakeMessagesAPI, workspace: Path, mode: str
) -> None:
    make_repo(workspace)
    tiller: Tiller = await start(permissionMode=mode, sandbox="off")
    api.enqueue(
        {"content": [tool_use("bash", "b1", command="git status")]},
        {"content": [text("clean")]},
    )
    await tiller.run("status?")
    assert [kind for kind, _ in tiller.asked if kind == "tiller/confirmTool"] == []
    result = results_of(api, 1)[0]
    assert not result.get("is_error"), result
    assert "On branch" in str(result["content"])


@pytest.mark.parametrize(
    ("setting", "command"),
    [
        pytest.param("[core]\n\tfsmonitor = {program}; false\n", "git status", id="fsmonitor"),
        pytest.param("[diff]\n\texternal = {program}\n", "git diff", id="diff_external"),
    ],
)
async def test_config_written_earlier_in_the_same_step_is_judged_before_git_runs(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path, setting: str, command: str
) -> None:
    """The calls of one response are judged before the first runs; a write among them makes
    the later calls be judged again, so a git command judged against the old config never
    runs unasked against the new one (the client here denies what it is asked)."""
    marker = tmp_path / "marker"
    make_repo(workspace)
    (workspace / "a.txt").write_text("two\n")
    git(workspace, "config", "extensions.worktreeConfig", "true")
    evil = setting.format(program=f"touch {marker}")
    tiller: Tiller = await start(permissionMode="acceptEdits", sandbox="off")
    api.enqueue(
        {
            "content": [
                tool_use("write_file", "w1", path=".git/config.worktree", content=evil),
                tool_use("bash", "b1", command=command),
            ]
        },
        {"content": [text("done")]},
    )
    await tiller.run("look")
    asked = [p for kind, p in tiller.asked if kind == "tiller/confirmTool"]
    assert [p["preview"]["command"] for p in asked] == [command]
    results = results_of(api, 1)
    assert [r.get("is_error", False) for r in results] == [False, True], results
    assert not marker.exists()
    run_git_directly(workspace, command)
    assert marker.exists(), "the written config does run the program for a plain git"
