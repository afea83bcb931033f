"""MCP server configuration read as Claude Code writes it: sources and their precedence,
``${VAR}`` expansion, workspace servers only once enabled, bad entries named, tool names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiller.core.config import parse_config
from tiller.errors import ConfigError
from tiller.extend.mcp.config import (
    DISABLED,
    Http,
    Launch,
    McpConfig,
    Stdio,
    acp_servers,
    parse_server,
    read_mcp_config,
    tool_name,
)
from tiller.extend.settings_layer import read_settings
from tiller.extend.trust import Trust

TRUSTED = Trust(True, "test")


def mcp(
    ws: Path,
    client: dict[str, object] | None = None,
    session: dict[str, object] | None = None,
    enable: dict[str, object] | None = None,
    *,
    env: dict[str, str],
    trust: Trust = TRUSTED,
) -> McpConfig:
    return read_mcp_config(read_settings(ws, trust, env), client, session, enable, env)


def launch(raw: object, env: dict[str, str]) -> Launch:
    return parse_server(raw, env).launch


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_variables_expand_with_defaults_as_claude_code_documents() -> None:
    raw = {
        "command": "${TOOLS}/server",
        "args": ["--db", "${DB:-local.db}"],
        "env": {"TOKEN": "${GH_TOKEN}"},
    }
    found = launch(raw, {"TOOLS": "/opt/tools", "GH_TOKEN": "t0k"})
    assert found == Stdio("/opt/tools/server", ("--db", "local.db"), {"TOKEN": "t0k"})


def test_a_missing_variable_without_default_names_it() -> None:
    with pytest.raises(ValueError, match="missing environment variables: API_KEY"):
        parse_server({"type": "http", "url": "https://x/${API_KEY}"}, {})


def test_http_and_sse_servers_take_url_and_headers() -> None:
    http = launch({"url": "https://mcp.example.com/mcp", "headers": {"A": "b"}}, {})
    assert http == Http("https://mcp.example.com/mcp", {"A": "b"}, "http")
    sse = launch({"type": "sse", "url": "http://localhost:9/sse"}, {})
    assert isinstance(sse, Http) and sse.kind == "sse"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"type": "ftp", "url": "x"}, "'type' must be 'stdio', 'http' or 'sse'"),
        ({"args": ["x"]}, "needs a 'command'"),
        ({"command": "x", "args": "--flag"}, "'args' must be a list of strings"),
        ({"command": "x", "env": {"A": 1}}, "'env' must be an object of strings"),
        ({"command": "x", "timeout": "3s"}, "'timeout' must be milliseconds"),
        ({"command": "x", "disabled": "yes"}, "'disabled' must be true or false"),
        ({"type": "http", "url": "ftp://x"}, "needs a 'url'"),
    ],
)
def test_bad_entries_say_what_is_wrong(raw: object, problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("(", r"\(")):
        parse_server(raw, {})


def test_sources_and_their_precedence(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    env = {"HOME": str(home)}
    write(home / ".claude.json", {
        "mcpServers": {"a": {"command": "user-claude"}, "b": {"command": "user-claude"}},
        "projects": {str(ws): {"mcpServers": {"c": {"command": "local-claude"}},
                               "enabledMcpjsonServers": ["b", "d"]}},
    })  # fmt: skip
    write(home / ".config" / "tiller" / "settings.json", {"mcpServers": {"b": {"command": "t"}}})
    write(ws / ".mcp.json", {"mcpServers": {"b": {"command": "project"}, "d": {"command": "p"}}})
    config = mcp(ws, {"e": {"command": "client"}}, {"a": {"command": "acp"}}, env=env)
    assert config.problems == ()
    launched = {name: s.launch for name, s in config.servers.items()}
    assert launched == {
        "a": Stdio("acp"),  # the ACP session's wins over the user's
        "b": Stdio("project"),  # .mcp.json over both user files
        "c": Stdio("local-claude"),
        "d": Stdio("p"),
        "e": Stdio("client"),
    }
    assert config.servers["b"].source == str(ws / ".mcp.json")
    assert config.servers["a"].scope == "session"


def test_a_workspace_server_starts_once_approved_in_any_settings_file(tmp_path: Path) -> None:
    """One rule: trusted folder and approved, in the user's files or the folder's own
    (``.claude/settings.local.json``, where Claude Code keeps the user's yes)."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    env = {"HOME": str(home)}
    write(ws / ".mcp.json", {"mcpServers": {"mine": {"command": "run-me"}}})
    write(ws / ".tiller" / "settings.json", {"mcpServers": {"also": {"command": "run-me"}}})
    held = mcp(ws, env=env)
    assert {n: s.held for n, s in held.servers.items()} == {
        "mine": "not approved", "also": "not approved"
    }  # fmt: skip
    assert '"enabledMcpjsonServers": ["mine"] to .claude/settings.local.json' in (
        held.servers["mine"].blocked or ""
    )
    assert "~/.claude/settings.json" in (held.servers["mine"].blocked or "")
    write(ws / ".claude" / "settings.local.json", {"enabledMcpjsonServers": ["mine"]})
    approved = mcp(ws, env=env)
    assert approved.servers["mine"].blocked is None and approved.servers["mine"].held is None
    assert approved.servers["also"].held == "not approved"
    write(home / ".claude" / "settings.json", {"enableAllProjectMcpServers": True})
    assert all(s.blocked is None for s in mcp(ws, env=env).servers.values())
    by_option = mcp(
        ws, enable={"enabledMcpjsonServers": ["also"]}, env={"HOME": str(tmp_path / "nobody")}
    )
    assert by_option.servers["also"].blocked is None


def test_disabled_mcpjson_servers_wins_from_any_file(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    env = {"HOME": str(home)}
    write(home / ".claude" / "settings.json", {"enableAllProjectMcpServers": True})
    write(home / ".config" / "tiller" / "settings.json", {"mcpServers": {"own": {"command": "o"}}})
    write(ws / ".mcp.json", {"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}})
    write(ws / ".claude" / "settings.json", {"disabledMcpjsonServers": ["b", "own"]})
    for trust in (TRUSTED, Trust(False, "not trusted yet")):  # a no counts from any file
        config = mcp(ws, env=env, trust=trust)
        assert config.servers["b"].held == ("disabled" if trust.trusted else "untrusted")
    config = mcp(ws, env=env)
    assert config.servers["a"].blocked is None
    assert config.servers["b"].blocked == DISABLED and config.servers["b"].notice is None
    assert config.servers["own"].blocked is None  # it names .mcp.json's servers only


def test_claude_config_dir_is_honoured(tmp_path: Path) -> None:
    write(tmp_path / "cc" / ".claude.json", {"mcpServers": {"x": {"command": "from-cc"}}})
    config = mcp(
        tmp_path / "ws",
        env={"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")},
    )
    assert config.servers["x"].launch == Stdio("from-cc")


def test_a_bad_file_or_entry_is_named_and_the_others_still_work(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / ".mcp.json", {"mcpServers": {"bad": {"type": "ftp"}, "good": {"command": "ok"}}})
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".claude.json").write_text("{broken")
    config = mcp(ws, {"fine": {"command": "x"}}, env={"HOME": str(tmp_path / "home")})
    assert set(config.servers) == {"good", "fine"}
    assert any(p.startswith(f"{ws / '.mcp.json'}: MCP server 'bad':") for p in config.problems)
    # a broken file is the settings layer's to tell (once, for every consumer)
    problems = read_settings(ws, TRUSTED, {"HOME": str(tmp_path / "home")}).problems
    assert any(".claude.json: not JSON" in p for p in problems)


def test_keys_other_tools_write_are_read_and_no_entry_is_lost_to_an_unknown_one(
    tmp_path: Path,
) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    write(home / ".config" / "tiller" / "settings.json", {"mcpServers": {
        "slow": {"command": "s", "timeout": 90000},
        "off": {"command": "o", "disabled": True},
        "cline": {"command": "c", "autoApprove": ["delete_everything"], "alwaysAllow": []},
    }})  # fmt: skip
    config = mcp(ws, env={"HOME": str(home)})
    assert config.servers["slow"].call_seconds == 90.0  # milliseconds, as Gemini CLI reads it
    assert config.servers["slow"].blocked is None
    assert "disabled" in (config.servers["off"].blocked or "")
    assert config.servers["cline"].launch == Stdio("c")  # kept: the unknown keys are a notice
    assert config.servers["cline"].blocked is None
    assert config.problems == (
        f"{home / '.config' / 'tiller' / 'settings.json'}: MCP server 'cline': "
        "ignored alwaysAllow, autoApprove",
    )


def test_an_untrusted_folder_starts_none_of_its_servers_even_enabled_by_the_user(
    tmp_path: Path,
) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    env = {"HOME": str(home)}
    write(home / ".claude" / "settings.json", {"enableAllProjectMcpServers": True})
    write(home / ".config" / "tiller" / "settings.json", {"mcpServers": {"mine": {"command": "m"}}})
    write(ws / ".mcp.json", {"mcpServers": {"repo": {"command": "touch /tmp/M"}}})
    write(ws / ".tiller" / "settings.local.json", {"mcpServers": {"evil": {"command": "sh"}}})
    untrusted = mcp(ws, env=env, trust=Trust(False, "not trusted yet"))
    for name in ("repo", "evil"):
        assert untrusted.servers[name].held == "untrusted"
        why = untrusted.servers[name].blocked or ""
        assert why.startswith("the folder is not trusted") and "/trust yes" in why
        assert f'"enabledMcpjsonServers": ["{name}"] to .claude/settings.local.json' in why
    assert untrusted.servers["mine"].blocked is None  # the user's own server
    trusted = mcp(ws, env=env)
    assert trusted.servers["repo"].blocked is None  # trusted and enabled by the user
    assert trusted.servers["evil"].blocked is None


def test_a_shipped_file_approves_nothing_until_the_folder_is_trusted(tmp_path: Path) -> None:
    """git tracks ``settings.local.json`` like any file: its yes counts once the user trusted
    the folder (whose files may then run hooks anyway), never before."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    env = {"HOME": str(home)}
    write(ws / ".tiller" / "settings.local.json", {
        "mcpServers": {"evil": {"command": "sh", "args": ["-c", "touch /tmp/M"]}},
        "enableAllProjectMcpServers": True,
    })  # fmt: skip
    untrusted = mcp(ws, env=env, trust=Trust(False, "not trusted yet"))
    assert untrusted.servers["evil"].scope == "workspace"
    assert untrusted.servers["evil"].held == "untrusted"
    assert mcp(ws, env=env).servers["evil"].blocked is None


def test_each_held_server_is_one_notice_naming_the_file_and_key_to_edit(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    write(ws / ".mcp.json", {"mcpServers": {
        "repo": {"command": "r"}, "off": {"command": "o", "disabled": True},
    }})  # fmt: skip
    config = mcp(ws, {"mine": {"command": "m"}}, env={"HOME": str(home)})
    notices = [s.notice for s in config.servers.values() if s.notice is not None]
    assert notices == [
        f"server 'repo' of {ws / '.mcp.json'} is not started: not enabled: a server named in the "
        'workspace\'s files starts only once you approve it: add "enabledMcpjsonServers": '
        '["repo"] to .claude/settings.local.json (this folder only; "enableAllProjectMcpServers": '
        "true approves all of its servers; ~/.claude/settings.json takes either key for every "
        "folder), then start Tiller again"
    ]


def test_tool_names_are_what_the_api_accepts() -> None:
    assert tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert tool_name("my server", "do.it") == "mcp__my_server__do_it"
    assert len(tool_name("s" * 40, "t" * 40)) == 64


def test_acp_servers_take_the_claude_code_shape() -> None:
    servers = acp_servers([
        {"name": "fs", "command": "/bin/fs", "args": ["/w"], "env": [{"name": "A", "value": "1"}]},
        {"type": "http", "name": "web", "url": "https://h/mcp",
         "headers": [{"name": "Authorization", "value": "Bearer x"}]},
    ])  # fmt: skip
    assert servers == {
        "fs": {"type": "stdio", "command": "/bin/fs", "args": ["/w"], "env": {"A": "1"}},
        "web": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer x"}},
    }


def test_initialization_options_validate_the_mcp_keys() -> None:
    config = parse_config(
        {"mcpServers": {"t": {"command": "x"}}, "mcpAllow": ["mcp__t__*"], "mcpCallSeconds": 5}
    )
    assert config.mcp.allow == ("mcp__t__*",)
    assert config.mcp.call_seconds == 5
    with pytest.raises(ConfigError, match="mcpReadOnly"):
        parse_config({"mcpReadOnly": "mcp__t__*"})
    with pytest.raises(ConfigError, match="mcpServers"):
        parse_config({"mcpServers": ["t"]})
