""" "Always allow" keeps the rule in ``.tiller/settings.local.json``, the user's own file: in a git
repository it must not show up as a file to commit (Claude Code has git ignore its
``.claude/settings.local.json`` the same way). Through the real server, with real git."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_turn_basics import text, tool_use


def git(where: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=where, capture_output=True, text=True, check=True
    ).stdout


async def test_always_allow_in_a_git_repository_leaves_git_status_clean_of_the_rules_file(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    git(workspace, "init", "-q")
    (workspace / ".gitignore").write_text("build/\n")

    async def always(params: Any) -> Any:
        return {"decision": "allowAlways"}

    tiller.on_confirm = always
    api.enqueue(
        {"content": [tool_use("bash", "t1", command="touch made")]}, {"content": [text("done")]}
    )
    ended = await tiller.run("make it")
    assert ended["outcome"] == "completed"
    assert (workspace / ".tiller" / "settings.local.json").exists()
    status = git(workspace, "status", "--porcelain", "--untracked-files=all")
    assert status.splitlines() == ["?? .gitignore", "?? made"]  # the rules file is not there
    assert (workspace / ".gitignore").read_text() == "build/\n"  # the user's file untouched
