"""MCP server configuration read as Claude Code writes it: sources and their precedence,
``${VAR}`` expansion, workspace servers only once enabled, bad entries named, tool names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiller.config import parse_config
from tiller.errors import ConfigError
from tiller.extend.mcp.config import (
    Http,
    Stdio,
    acp_servers,
    parse_server,
    read_mcp_config,
    tool_name,
)


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_variables_expand_with_defaults_as_claude_code_documents() -> None:
    raw = {
        "command": "${TOOLS}/server",
        "args": ["--db", "${DB:-local.db}"],
        "env": {"TOKEN": "${GH_TOKEN}"},
    }
    launch = parse_server(raw, {"TOOLS": "/opt/tools", "GH_TOKEN": "t0k"})
    assert launch == Stdio("/opt/tools/server", ("--db", "local.db"), {"TOKEN": "t0k"})


def test_a_missing_variable_without_default_names_it() -> None:
    with pytest.raises(ValueError, match="missing environment variables: API_KEY"):
        parse_server({"type": "http", "url": "https://x/${API_KEY}"}, {})


def test_http_and_sse_servers_take_url_and_headers() -> None:
    http = parse_server({"url": "https://mcp.example.com/mcp", "headers": {"A": "b"}}, {})
    assert http == Http("https://mcp.example.com/mcp", {"A": "b"}, "http")
    sse = parse_server({"type": "sse", "url": "http://localhost:9/sse"}, {})
    assert isinstance(sse, Http) and sse.kind == "sse"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"type": "ftp", "url": "x"}, "'type' must be 'stdio', 'http' or 'sse'"),
        ({"args": ["x"]}, "needs a 'command'"),
        ({"command": "x", "args": "--flag"}, "'args' must be a list of strings"),
        ({"command": "x", "env": {"A": 1}}, "'env' must be an object of strings"),
        ({"command": "x", "timeout": 3}, "unknown keys ['timeout']"),
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
    config = read_mcp_config(ws, {"e": {"command": "client"}}, {"a": {"command": "acp"}}, env=env)
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


def test_workspace_servers_start_only_once_enabled(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    write(ws / ".mcp.json", {"mcpServers": {"mine": {"command": "run-me"}}})
    write(ws / ".tiller" / "settings.json", {"mcpServers": {"also": {"command": "run-me"}}})
    blocked = read_mcp_config(ws, env={"HOME": str(home)})
    assert blocked.servers["mine"].blocked is not None
    assert "enabledMcpjsonServers" in (blocked.servers["also"].blocked or "")
    # The repository cannot enable its own servers: its own settings do not count.
    write(ws / ".claude" / "settings.json", {"enableAllProjectMcpServers": True})
    assert read_mcp_config(ws, env={"HOME": str(home)}).servers["mine"].blocked is not None
    write(home / ".claude" / "settings.json", {"enableAllProjectMcpServers": True})
    enabled = read_mcp_config(ws, env={"HOME": str(home)})
    assert enabled.servers["mine"].blocked is None
    by_option = read_mcp_config(
        ws, enable={"enabledMcpjsonServers": ["also"]}, env={"HOME": str(tmp_path / "nobody")}
    )
    assert by_option.servers["also"].blocked is None
    assert by_option.servers["mine"].blocked is not None


def test_claude_config_dir_is_honoured(tmp_path: Path) -> None:
    write(tmp_path / "cc" / ".claude.json", {"mcpServers": {"x": {"command": "from-cc"}}})
    config = read_mcp_config(
        tmp_path / "ws",
        env={"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")},
    )
    assert config.servers["x"].launch == Stdio("from-cc")


def test_a_bad_file_or_entry_is_named_and_the_others_still_work(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / ".mcp.json", {"mcpServers": {"bad": {"type": "ftp"}, "good": {"command": "ok"}}})
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".claude.json").write_text("{broken")
    config = read_mcp_config(ws, {"fine": {"command": "x"}}, env={"HOME": str(tmp_path / "home")})
    assert set(config.servers) == {"good", "fine"}
    assert any(p.startswith(f"{ws / '.mcp.json'}: MCP server 'bad':") for p in config.problems)
    assert any(".claude.json: not JSON" in p for p in config.problems)


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
