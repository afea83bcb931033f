"""The environment tools get: the server's, without secrets (issue 7, bug 3)."""

from __future__ import annotations

import pytest

from tiller.config import parse_config
from tiller.errors import ConfigError
from tiller.tool_env import EnvRules, tool_env

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
