"""``webSearch`` / ``webFetch`` in the settings files (issue 36: `"webSearch": {"enabled": true}`
in ``~/.config/tiller/settings.json`` was silently ignored): each layer's keys over the one
below, the client's options on top, a file of an untrusted folder may only turn a tool off, and
a wrong value is a problem naming its file and key."""

from __future__ import annotations

import json
from pathlib import Path

from tiller.core.config import parse_config
from tiller.extend.settings_layer import read_settings
from tiller.extend.trust import Trust
from tiller.extend.web_settings import web_tools
from tiller.model.server_tools import ServerTools, WebToolSettings

TRUSTED = Trust(True, "the test")
UNTRUSTED = Trust(False, "not trusted yet")
NOTHING_GIVEN = ServerTools()


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def places(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """The user's Tiller settings file, the workspace, and the environment that finds them."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    return home / ".config" / "tiller" / "settings.json", ws, {"HOME": str(home)}


def test_the_users_settings_file_turns_web_search_on(tmp_path: Path) -> None:
    user, ws, env = places(tmp_path)
    write(user, {"webSearch": {"enabled": True, "maxUses": 3}})
    found = web_tools(read_settings(ws, UNTRUSTED, env), NOTHING_GIVEN)
    assert found.problems == ()
    assert found.tools.definitions("default") == (
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
    )


def test_true_and_false_stand_for_enabled(tmp_path: Path) -> None:
    user, ws, env = places(tmp_path)
    write(user, {"webSearch": True, "webFetch": False})
    tools = web_tools(read_settings(ws, TRUSTED, env), NOTHING_GIVEN).tools
    assert tools.web_search.enabled is True and tools.web_fetch.enabled is False


def test_nothing_anywhere_leaves_both_tools_off(tmp_path: Path) -> None:
    _, ws, env = places(tmp_path)
    found = web_tools(read_settings(ws, TRUSTED, env), NOTHING_GIVEN)
    assert found.tools.definitions("default") == () and found.problems == ()


def test_each_layer_replaces_the_keys_it_says_and_keeps_the_others(tmp_path: Path) -> None:
    user, ws, env = places(tmp_path)
    write(user, {"webFetch": {"enabled": True, "blockedDomains": ["ads.example"], "maxUses": 5}})
    write(ws / ".tiller" / "settings.json", {"webFetch": {"enabled": True, "maxUses": 9}})
    write(ws / ".claude" / "settings.local.json",
          {"webFetch": {"enabled": True, "allowedDomains": ["docs.python.org"]}})  # fmt: skip
    fetch = web_tools(read_settings(ws, TRUSTED, env), NOTHING_GIVEN).tools.web_fetch
    # the local file's allowed list replaces the user's blocked one (one key: the API takes
    # one list); the workspace's maxUses replaces the user's
    assert fetch == WebToolSettings(True, ("docs.python.org",), (), 9, None)


def test_the_clients_options_win_over_the_files_key_by_key(tmp_path: Path) -> None:
    """``tiller run --web-search`` sends ``{"enabled": true}``: the file's domains still apply;
    ``--no-web-search`` turns off what the file turned on."""
    user, ws, env = places(tmp_path)
    write(user, {"webSearch": {"enabled": False, "allowedDomains": ["pypi.org"]}})
    settings = read_settings(ws, TRUSTED, env)
    on = parse_config({"webSearch": {"enabled": True}}).server_tools
    assert web_tools(settings, on).tools.definitions("default") == (
        {"type": "web_search_20250305", "name": "web_search", "allowed_domains": ["pypi.org"]},
    )
    write(user, {"webSearch": {"enabled": True}})
    off = parse_config({"webSearch": {"enabled": False}}).server_tools
    assert web_tools(read_settings(ws, TRUSTED, env), off).tools.definitions("default") == ()


def test_an_untrusted_folders_file_cannot_turn_a_tool_on_and_says_it_was_left_out(
    tmp_path: Path,
) -> None:
    _, ws, env = places(tmp_path)
    write(ws / ".tiller" / "settings.json", {"webFetch": {"enabled": True}})
    untrusted = read_settings(ws, UNTRUSTED, env)
    assert web_tools(untrusted, NOTHING_GIVEN).tools.definitions("default") == ()
    assert untrusted.withheld() == (".tiller/settings.json (webFetch)",)
    trusted = read_settings(ws, TRUSTED, env)
    assert [t["name"] for t in web_tools(trusted, NOTHING_GIVEN).tools.definitions("default")] == [
        "web_fetch"
    ]


def test_an_untrusted_folders_file_may_turn_a_tool_off(tmp_path: Path) -> None:
    user, ws, env = places(tmp_path)
    write(user, {"webSearch": True})
    write(ws / ".claude" / "settings.json", {"webSearch": {"enabled": False}})
    settings = read_settings(ws, UNTRUSTED, env)
    assert web_tools(settings, NOTHING_GIVEN).tools.definitions("default") == ()
    assert settings.withheld() == ()  # turning off widens nothing: nothing was left out


def test_an_untrusted_file_turning_a_tool_off_gives_nothing_else(tmp_path: Path) -> None:
    """Only ``enabled: false`` counts from a stranger's file: its domains would apply once the
    client turned the tool on."""
    _, ws, env = places(tmp_path)
    write(ws / ".tiller" / "settings.local.json",
          {"webFetch": {"enabled": False, "allowedDomains": ["evil.example"]}})  # fmt: skip
    settings = read_settings(ws, UNTRUSTED, env)
    on = parse_config({"webFetch": {"enabled": True}}).server_tools
    assert web_tools(settings, on).tools.web_fetch.allowed_domains == ()
    assert settings.withheld() == (".tiller/settings.local.json (webFetch)",)


def test_a_wrong_value_is_a_problem_naming_the_file_and_key_and_the_rest_still_counts(
    tmp_path: Path,
) -> None:
    user, ws, env = places(tmp_path)
    write(user, {"webSearch": {"enabled": True}})
    write(ws / ".tiller" / "settings.json",
          {"webSearch": {"enabled": True, "maxUses": 0}, "webFetch": "yes"})  # fmt: skip
    found = web_tools(read_settings(ws, TRUSTED, env), NOTHING_GIVEN)
    assert found.problems == (
        ".tiller/settings.json: webSearch.maxUses: expected 1 … 1000, got 0: left out",
        ".tiller/settings.json: webFetch: expected {enabled: bool, allowedDomains?, "
        "blockedDomains?, ...}: left out",
    )
    assert found.tools.web_search.enabled is True  # the user's file still counts
    assert found.tools.web_fetch.enabled is None


def test_the_options_and_the_files_share_one_shape_and_one_spelling_of_domains(
    tmp_path: Path,
) -> None:
    user, ws, env = places(tmp_path)
    value = {"enabled": True, "blockedDomains": ["https://Bücher.example:443/x"]}
    write(user, {"webFetch": value})
    from_file = web_tools(read_settings(ws, TRUSTED, env), NOTHING_GIVEN).tools
    from_options = parse_config({"webFetch": value}).server_tools
    assert from_file.definitions("default") == from_options.definitions("default")
    assert from_file.web_fetch.blocked_domains == ("xn--bcher-kva.example",)
