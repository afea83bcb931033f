"""The environment tools get: the server's, without secrets (issue 7, bug 3)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tiller.core.config import parse_config
from tiller.errors import ConfigError
from tiller.workspace.tool_env import EnvRules, tool_env, unasked_env

BASE = {
    "ANTHROPIC_API_KEY": "sk-ant",
    "ANTHROPIC_AUTH_TOKEN": "tok",
    "OPENAI_API_KEY": "sk-oa",
    "GITHUB_TOKEN": "ghp",
    "github_token": "ghp-lower",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "MY_APP_SECRET": "s",
    "DB_PASSWORD": "pw",
    "PATH": "/usr/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "MY_CORP_VAR": "c",
}


def test_default_rules_hide_the_api_key_and_credential_names() -> None:
    env = tool_env(EnvRules(), BASE)
    assert set(env) >= {"PATH", "HOME", "LANG", "MY_CORP_VAR"}
    for secret in BASE.keys() - {"PATH", "HOME", "LANG", "MY_CORP_VAR"}:
        assert secret not in env, secret


def test_scrub_env_adds_names_and_patterns() -> None:
    env = tool_env(EnvRules.from_setting(["MY_CORP_*", "LANG"]), BASE)
    assert "MY_CORP_VAR" not in env and "LANG" not in env and "PATH" in env


def test_bang_entry_lets_a_default_hidden_name_through() -> None:
    env = tool_env(EnvRules.from_setting(["!GITHUB_TOKEN"]), BASE)
    assert env["GITHUB_TOKEN"] == "ghp"
    assert "OPENAI_API_KEY" not in env


def test_the_anthropic_key_can_never_be_let_through() -> None:
    env = tool_env(EnvRules.from_setting(["!ANTHROPIC_API_KEY", "!ANTHROPIC_*", "!*"]), BASE)
    assert "ANTHROPIC_API_KEY" not in env and "ANTHROPIC_AUTH_TOKEN" not in env


def test_tools_never_prompt_and_git_reads_take_no_locks() -> None:
    env = tool_env(EnvRules(), {})
    assert env == {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}


def test_settings_parse_sandbox_and_scrub_env() -> None:
    config = parse_config({"sandbox": "always", "scrubEnv": ["FOO", "BAR_*", "!GH_TOKEN"]})
    assert config.sandbox == "always"
    assert config.scrub_env == ("FOO", "BAR_*", "!GH_TOKEN")
    assert parse_config({}).sandbox == "auto" and parse_config({}).scrub_env == ()


@pytest.mark.parametrize(
    "options",
    [{"sandbox": "sometimes"}, {"sandbox": True}, {"scrubEnv": "FOO"}, {"scrubEnv": ["A B"]}],
)
def test_bad_sandbox_settings_are_config_errors(options: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        parse_config(options)


# --- security issue, item 8: commands that run unasked get a git that runs no program -------


def test_unasked_env_turns_off_what_a_repository_could_make_git_run() -> None:
    env = unasked_env({"PATH": "/usr/bin", "GIT_EXTERNAL_DIFF": "x", "GIT_CONFIG_NOSYSTEM": "1"})
    assert env["GIT_CONFIG_COUNT"] == "4"
    overrides = {env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(4)}
    assert overrides == {
        "core.fsmonitor": "false",
        "core.hooksPath": "/dev/null",
        "core.pager": "cat",
        "diff.autoRefreshIndex": "false",
    }
    assert env["GIT_PAGER"] == "cat" and env["PAGER"] == "cat"
    assert "GIT_EXTERNAL_DIFF" not in env
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["PATH"] == "/usr/bin"


def test_unasked_env_keeps_the_users_command_line_config_and_its_input() -> None:
    base = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "a.b", "GIT_CONFIG_VALUE_0": "c"}
    env = unasked_env(base)
    assert env["GIT_CONFIG_COUNT"] == "5"
    assert (env["GIT_CONFIG_KEY_0"], env["GIT_CONFIG_VALUE_0"]) == ("a.b", "c")
    assert env["GIT_CONFIG_KEY_1"] == "core.fsmonitor"
    assert base == {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "a.b", "GIT_CONFIG_VALUE_0": "c"}
    assert unasked_env({"GIT_CONFIG_COUNT": "bogus"})["GIT_CONFIG_COUNT"] == "4"


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        check=False,
    )


def test_unasked_git_runs_no_fsmonitor_and_no_hook(tmp_path: Path) -> None:
    """Defense in depth: even a config that changed after the classifier's verdict."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")
    _git(repo, "add", "a.txt")
    _git(repo, "config", "core.fsmonitor", f"touch {tmp_path / 'fsmonitor'}; false")
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'hook'}\n")
    hook.chmod(0o755)
    env = unasked_env(tool_env(EnvRules()))
    _git(repo, "status", env=env)
    _git(repo, "commit", "-qm", "x", env=env)
    assert not (tmp_path / "fsmonitor").exists() and not (tmp_path / "hook").exists()
    approved = tool_env(EnvRules())  # the user's normal git: their hooks run
    _git(repo, "status", env=approved)
    _git(repo, "commit", "-qm", "y", "--allow-empty", env=approved)
    assert (tmp_path / "fsmonitor").exists() and (tmp_path / "hook").exists()


def test_unasked_git_diff_leaves_the_index_of_a_copied_repository_as_it_was(
    tmp_path: Path,
) -> None:
    """Found by the read-only property (tests/unit/test_readonly_property.py): in a copy, every
    entry's stat data differs from the index's, and ``git diff HEAD`` rewrote ``.git/index``
    with the refreshed data although ``GIT_OPTIONAL_LOCKS=0``. Unasked, it writes nothing."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    for name in ("a.txt", "b.txt", "c.txt"):
        (repo / name).write_text(f"{name}\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "x")
    (repo / "a.txt").write_text("changed\n")
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    index = (copy / ".git" / "index").read_bytes()
    for command in (["diff", "HEAD"], ["diff"], ["status"], ["diff", "--stat", "HEAD"]):
        _git(copy, *command, env=unasked_env(tool_env(EnvRules())))
        assert (copy / ".git" / "index").read_bytes() == index, command
    _git(copy, "diff", "HEAD", env=tool_env(EnvRules()))  # what it did without the config
    assert (copy / ".git" / "index").read_bytes() != index
