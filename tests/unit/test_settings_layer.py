"""The one settings layer: every file read once, with its scope and the folder's trust, into one
typed value; a wrong key costs that key only; a file inside the workspace widens nothing until
the folder is trusted."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tiller.core.permissions.rule_files import UNTRUSTED_ALLOW, book_of
from tiller.core.permissions.rules import Place
from tiller.extend.settings_layer import read_settings, shown
from tiller.extend.settings_schema import structure_tolerant
from tiller.extend.trust import Trust

TRUSTED = Trust(True, "the test")
UNTRUSTED = Trust(False, "not trusted yet")


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def env_of(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home")}


def test_sources_are_read_lowest_precedence_first_with_their_scope(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    write(home / ".claude" / "settings.json", {"env": {"A": "user-claude"}})
    write(
        home / ".claude.json",
        {
            "mcpServers": {"u": {"command": "u"}},
            "projects": {str(ws): {"enabledMcpjsonServers": ["p"]}},
        },
    )
    write(home / ".config" / "tiller" / "settings.json", {"env": {"A": "user-tiller"}})
    write(ws / ".mcp.json", {"mcpServers": {"p": {"command": "p"}}})
    write(ws / ".claude" / "settings.json", {"env": {"A": "workspace"}})
    write(ws / ".tiller" / "settings.local.json", {"env": {"A": "local"}})
    settings = read_settings(ws, TRUSTED, env_of(tmp_path))
    assert [(s.scope, s.shown, s.in_workspace) for s in settings.sources] == [
        ("user", "~/.claude/settings.json", False),
        ("user", "~/.claude.json", False),
        ("user", "~/.config/tiller/settings.json", False),
        ("workspace", ".mcp.json", True),
        ("workspace", ".claude/settings.json", True),
        ("local", "~/.claude.json", False),  # Claude Code's record of the folder: the user's
        ("local", ".tiller/settings.local.json", True),
    ]
    assert settings.problems == ()
    assert ("p",) in [s.settings.enabled_mcpjson_servers for s in settings.enabling()]


def test_a_wrong_key_costs_that_key_only_never_the_deny_rules_beside_it(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / ".claude" / "settings.json", {
        "permissions": {"deny": ["Bash(rm:*)"], "additionalDirectories": "../docs",
                        "allow": "Bash"},
        "hooks": ["not", "an", "object"], "disableAllHooks": "yes", "env": {"N": 1},
    })  # fmt: skip
    settings = read_settings(ws, TRUSTED, env_of(tmp_path))
    (source,) = settings.sources
    assert source.settings.permissions.deny == ["Bash(rm:*)"]
    assert source.settings.hooks is None and source.settings.env == {}
    assert settings.problems == (
        ".claude/settings.json: permissions: additionalDirectories must be a list of strings: "
        "left out",
        ".claude/settings.json: hooks must be an object or null: left out",
        ".claude/settings.json: disableAllHooks must be true or false: left out",
        ".claude/settings.json: env must be an object of strings: left out",
    )
    book = book_of(settings)  # the rule lists are the rules' to read, entry by entry
    assert [r.text for r in book.rules] == ["Bash(rm:*)"]
    assert ".claude/settings.json: permissions.allow is not a list" in book.problems


def test_a_broken_file_is_named_hides_no_other_and_its_rules_fail_closed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / ".claude" / "settings.json", "{not json")
    write(ws / ".claude" / "settings.local.json", "[1, 2]")
    write(ws / ".tiller" / "settings.json", {"permissions": {"deny": ["Read(.env)"]}})
    write(ws / ".tiller" / "settings.local.json", {"permissions": ["Bash(rm:*)"]})
    settings = read_settings(ws, TRUSTED, env_of(tmp_path))
    assert [(s.shown, s.unreadable) for s in settings.sources] == [
        (".claude/settings.json", True),
        (".tiller/settings.json", False),
        (".claude/settings.local.json", True),
        (".tiller/settings.local.json", True),  # permissions is not an object
    ]
    assert settings.problems == (
        ".claude/settings.json: not JSON (Expecting property name enclosed in double quotes at "
        "line 1)",
        ".claude/settings.local.json: not a JSON object",
        ".tiller/settings.local.json: permissions must be an object: left out",
    )
    # whatever deny rules such a file held are unknown: every call is asked until it is fixed
    book = book_of(settings)
    assert [(r.effect, r.tool, r.source) for r in book.rules] == [
        ("ask", "*", ".claude/settings.json"),
        ("deny", "Read", ".tiller/settings.json"),
        ("ask", "*", ".claude/settings.local.json"),
        ("ask", "*", ".tiller/settings.local.json"),
    ]
    assert book.for_call("list_files", {"path": "."}, Place(ws, str(tmp_path))) is not None


def test_unknown_keys_are_told_in_tillers_files_and_left_to_claude_code_in_its_own(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    write(ws / ".claude" / "settings.json", {"model": "opus", "statusLine": {}})
    write(ws / ".claude" / "settings.local.json", {"model": "opus"})
    write(tmp_path / "home" / ".claude" / "settings.json", {"model": "opus"})
    write(ws / ".tiller" / "settings.json", {"languageServer": {}})
    write(ws / ".tiller" / "settings.local.json", {"mcpServer": {}})
    write(tmp_path / "home" / ".config" / "tiller" / "settings.json", {"modle": "opus"})
    settings = read_settings(ws, TRUSTED, env_of(tmp_path))
    assert settings.problems == (
        "~/.config/tiller/settings.json: modle: not a key Tiller knows: ignored",
        ".tiller/settings.json: languageServer: not a key Tiller knows: ignored",
        ".tiller/settings.local.json: mcpServer: not a key Tiller knows: ignored",
    )


def test_the_config_dirs_follow_the_environment(tmp_path: Path) -> None:
    ws, claude, tiller = tmp_path / "ws", tmp_path / "c", tmp_path / "t"
    write(claude / "settings.json", {"env": {"FROM": "claude"}})
    write(claude / ".claude.json", {"mcpServers": {"x": {"command": "x"}}})
    write(tiller / "settings.json", {"env": {"FROM": "tiller"}})
    env = {
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(claude),
        "TILLER_CONFIG_DIR": str(tiller),
    }
    found = read_settings(ws, TRUSTED, env).sources
    assert [(s.path, s.settings.env.get("FROM")) for s in found] == [
        (claude / "settings.json", "claude"),
        (claude / ".claude.json", None),
        (tiller / "settings.json", "tiller"),
    ]


def test_an_untrusted_folders_files_narrow_but_never_grant(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(tmp_path / "home" / ".claude" / "settings.json", {"permissions": {"allow": ["Read"]}})
    write(ws / ".claude" / "settings.json", {
        "permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]},
        "hooks": {"SessionStart": []}, "env": {"LD_PRELOAD": "/tmp/x.so"},
        "sandbox": {"enabled": False},
    })  # fmt: skip
    write(ws / ".claude" / "settings.local.json", {"languageServers": {"x": {}}})
    write(ws / ".mcp.json", {"mcpServers": {"m": {"command": "m"}}})
    settings = read_settings(ws, UNTRUSTED, env_of(tmp_path))
    assert [(s.shown, s.trusted) for s in settings.sources] == [
        ("~/.claude/settings.json", True),
        (".mcp.json", False),
        (".claude/settings.json", False),
        (".claude/settings.local.json", False),
    ]
    assert [s.shown for s in settings.granting()] == ["~/.claude/settings.json"]
    assert settings.withheld() == (
        ".mcp.json (MCP servers)",
        ".claude/settings.json (hooks, allow rules, environment, sandbox settings)",
        ".claude/settings.local.json (language servers)",
    )
    assert read_settings(ws, TRUSTED, env_of(tmp_path)).withheld() == ()


def test_a_user_settings_file_that_is_a_link_into_the_workspace_is_the_workspaces(
    tmp_path: Path,
) -> None:
    """Where a file lies decides whose it is: a link from the user's folder into the workspace
    still reads the workspace's text, so it is not trusted with the user's rights."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    write(ws / "planted.json", {"permissions": {"allow": ["Bash"]}})
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").symlink_to(ws / "planted.json")
    settings = read_settings(ws, UNTRUSTED, env_of(tmp_path))
    assert [(s.shown, s.in_workspace, s.trusted) for s in settings.sources] == [
        ("~/.claude/settings.json", True, False)
    ]
    assert settings.granting() == ()


def test_any_file_may_disable_hooks_even_an_untrusted_one(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(tmp_path / "home" / ".claude" / "settings.json", {"disableAllHooks": False})
    assert not read_settings(ws, UNTRUSTED, env_of(tmp_path)).hooks_disabled
    write(ws / ".claude" / "settings.local.json", {"disableAllHooks": True})
    assert read_settings(ws, UNTRUSTED, env_of(tmp_path)).hooks_disabled


def test_extra_folders_of_an_untrusted_workspace_are_withheld(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / ".tiller" / "settings.json", {"permissions": {"additionalDirectories": ["../d"]}})
    settings = read_settings(ws, UNTRUSTED, env_of(tmp_path))
    assert settings.withheld() == (".tiller/settings.json (additional directories)",)


def test_a_file_is_shown_relative_to_the_workspace_or_home_else_whole(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    assert shown(ws / ".mcp.json", ws, {"HOME": str(home)}) == ".mcp.json"
    assert shown(home / ".claude.json", ws, {"HOME": f"{home}/"}) == "~/.claude.json"
    assert shown(tmp_path / "homely" / "s.json", ws, {"HOME": str(home)}) == (
        f"{tmp_path}/homely/s.json"  # a name that starts like home's is not under it
    )
    assert shown(tmp_path / "etc" / "s.json", ws, {}) == f"{tmp_path}/etc/s.json"


def test_a_broken_mcp_json_or_claude_json_is_named_and_hides_no_other_file(
    tmp_path: Path,
) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    write(ws / ".mcp.json", "{not json")
    write(home / ".claude.json", "[]")
    write(ws / ".claude" / "settings.json", {"env": {"A": "1"}})
    settings = read_settings(ws, TRUSTED, env_of(tmp_path))
    assert [s.shown for s in settings.sources] == [".claude/settings.json"]
    assert settings.problems == (
        f"{home}/.claude.json: not a JSON object",
        ".mcp.json: not JSON (Expecting property name enclosed in double quotes at line 1)",
    )


def test_claude_codes_record_of_the_folder_is_found_by_its_real_path(tmp_path: Path) -> None:
    real, link, other = tmp_path / "real", tmp_path / "link", tmp_path / "other"
    real.mkdir()
    link.symlink_to(real)
    servers = {"mcpServers": {"s": {"command": "s"}}}
    write(tmp_path / "home" / ".claude.json", {"projects": {str(other): servers}})
    assert read_settings(link, TRUSTED, env_of(tmp_path)).sources == ()
    write(tmp_path / "home" / ".claude.json", {"projects": {str(real): servers}})
    (source,) = read_settings(link, TRUSTED, env_of(tmp_path)).sources
    assert (source.scope, source.settings.mcp_servers) == ("local", servers["mcpServers"])


def test_an_untrusted_folders_file_may_turn_the_web_tools_off_and_nothing_more(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    write(ws / ".claude" / "settings.json", {"webSearch": False, "webFetch": {"enabled": False}})
    write(ws / ".tiller" / "settings.json", {"webSearch": True, "webFetch": {"enabled": True}})
    settings = read_settings(ws, UNTRUSTED, env_of(tmp_path))
    assert settings.problems == ()
    assert settings.withheld() == (".tiller/settings.json (webSearch, webFetch)",)


def test_an_untrusted_folders_files_give_their_deny_and_ask_rules_and_name_the_allow_ones_left_out(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    write(ws / ".claude" / "settings.json", {
        "permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]},
    })  # fmt: skip
    write(ws / ".tiller" / "settings.json", {"permissions": {"ask": ["Bash(git push:*)"]}})
    untrusted = book_of(read_settings(ws, UNTRUSTED, env_of(tmp_path)))
    assert [(r.effect, r.text) for r in untrusted.rules] == [
        ("deny", "Bash(rm:*)"),
        ("ask", "Bash(git push:*)"),
    ]
    assert untrusted.problems == (UNTRUSTED_ALLOW.format(files=".claude/settings.json"),)
    trusted = book_of(read_settings(ws, TRUSTED, env_of(tmp_path)))
    assert [(r.effect, r.text) for r in trusted.rules] == [
        ("deny", "Bash(rm:*)"),
        ("allow", "Bash"),
        ("ask", "Bash(git push:*)"),
    ]
    assert trusted.problems == ()


def test_permissions_that_are_not_an_object_cost_that_key_only(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / ".tiller" / "settings.json", {"permissions": ["Read"], "env": {"A": "1"}})
    settings = read_settings(ws, TRUSTED, env_of(tmp_path))
    (source,) = settings.sources
    assert source.unreadable and source.settings.env == {"A": "1"}
    assert settings.problems == (".tiller/settings.json: permissions must be an object: left out",)


def test_a_wrong_value_is_told_as_what_its_key_must_be(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / ".tiller" / "settings.json", {
        "permissions": {"additionalDirectories": ["../docs", 7], "defaultMode": 3},
    })  # fmt: skip
    settings = read_settings(ws, TRUSTED, env_of(tmp_path))
    (source,) = settings.sources
    assert source.settings.permissions.additional_directories == ()
    assert settings.problems == (
        ".tiller/settings.json: permissions: additionalDirectories must be a list of strings: "
        "left out",
        ".tiller/settings.json: permissions: defaultMode must be a string or null: left out",
    )


@dataclass(frozen=True)
class Sizes:
    """A settings shape with a list of numbers (every list of Tiller's settings holds strings)."""

    sizes: tuple[int, ...] = ()


def test_a_list_of_other_than_strings_is_told_as_a_list() -> None:
    value, problems, unknown = structure_tolerant(Sizes, {"sizes": [1, "2"], "more": 0}, "f.json")
    assert value == Sizes()
    assert problems == ["f.json: sizes must be a list: left out"]
    assert unknown == ["more"]
    assert structure_tolerant(Sizes, {"sizes": [1, 2]}, "f.json") == (Sizes((1, 2)), [], [])
