"""``.tiller/settings.local.json`` (the user's "Always allow" rules) is git-ignored when Tiller
writes it, through the repository's own ``info/exclude``, never the user's ``.gitignore``; real
git decides (``git status --porcelain`` shows nothing of it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tiller.core.permissions.rule_files import add_rule
from tiller.workspace.git_exclude import keep_out_of_git

LOCAL = Path(".tiller") / "settings.local.json"


@pytest.fixture(autouse=True)
def no_user_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's global excludes (Claude Code's rule, say) must not decide these tests."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("TILLER_CONFIG_DIR", str(tmp_path / "home" / "tiller"))


def git(where: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=where, capture_output=True, text=True, check=True
    ).stdout


def repository(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    return path


def test_always_allow_leaves_git_status_clean_and_the_gitignore_untouched(tmp_path: Path) -> None:
    ws = repository(tmp_path / "ws")
    add_rule(ws, "allow", "Bash(touch b)")
    add_rule(ws, "allow", "Bash(touch c)")  # a second write adds no second line
    assert (ws / LOCAL).exists()
    assert git(ws, "status", "--porcelain", "--untracked-files=all") == ""
    assert not (ws / ".gitignore").exists()
    exclude = (ws / ".git" / "info" / "exclude").read_text()
    assert exclude.count("/.tiller/settings.local.json\n") == 1


def test_a_workspace_inside_a_repository_ignores_its_own_file_only(tmp_path: Path) -> None:
    top = repository(tmp_path / "repo")
    ws = top / "pkg [v1]"
    ws.mkdir()
    add_rule(ws, "allow", "Bash(touch b)")
    assert git(top, "status", "--porcelain", "--untracked-files=all") == ""
    other = top / LOCAL  # the same name elsewhere in the repository is not the user's
    other.parent.mkdir()
    other.write_text("{}")
    assert git(top, "status", "--porcelain", "--untracked-files=all") == f"?? {LOCAL}\n"


def test_nothing_is_added_where_git_ignores_or_tracks_it_already(tmp_path: Path) -> None:
    ignored = repository(tmp_path / "ignored")
    (ignored / ".gitignore").write_text(".tiller/\n")
    add_rule(ignored, "allow", "Bash(touch b)")
    assert "settings.local.json" not in (ignored / ".git" / "info" / "exclude").read_text()
    tracked = repository(tmp_path / "tracked")
    (tracked / LOCAL).parent.mkdir()
    (tracked / LOCAL).write_text("{}")
    git(tracked, "add", str(LOCAL))
    assert keep_out_of_git(tracked / LOCAL) is None  # the repository chose to keep it
    assert "settings.local.json" not in (tracked / ".git" / "info" / "exclude").read_text()


def test_outside_a_repository_nothing_happens(tmp_path: Path) -> None:
    ws = tmp_path / "plain"
    ws.mkdir()
    add_rule(ws, "allow", "Bash(touch b)")
    assert (ws / LOCAL).exists() and not (ws / ".git").exists()


def test_a_repositorys_config_runs_nothing_while_git_is_asked(tmp_path: Path) -> None:
    ws = repository(tmp_path / "ws")
    mark = tmp_path / "mark"
    hook = tmp_path / "monitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {mark}\n")
    hook.chmod(0o755)
    git(ws, "config", "core.fsmonitor", str(hook))
    (ws / "a").write_text("a")
    git(ws, "add", "a")  # (runs the monitor: git's own command, the test's)
    mark.unlink(missing_ok=True)
    add_rule(ws, "allow", "Bash(touch b)")
    assert "/.tiller/settings.local.json" in (ws / ".git" / "info" / "exclude").read_text()
    assert not mark.exists()
