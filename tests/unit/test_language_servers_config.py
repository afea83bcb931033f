"""``languageServers``: read from the settings files and initializationOptions, a bad entry a
problem naming its file, a later source winning whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiller.core.config import parse_config
from tiller.errors import ConfigError
from tiller.extend.language_servers.config import LanguageServersConfig, read_language_servers
from tiller.extend.settings_layer import read_settings
from tiller.extend.trust import Trust

PYRIGHT = {"command": ["pyright-langserver", "--stdio"], "extensions": [".py", ".PYI"]}
TS = {"command": ["typescript-language-server", "--stdio"], "extensions": [".ts"]}


TRUSTED = Trust(True, "the test")


def env_for(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "TILLER_CONFIG_DIR": str(tmp_path / "user")}


def servers(
    tmp_path: Path, client: dict[str, object] | None = None, trust: Trust = TRUSTED
) -> LanguageServersConfig:
    """The workspace is ``tmp_path / "ws"``; the user's settings are ``tmp_path / "user"``."""
    return read_language_servers(read_settings(tmp_path / "ws", trust, env_for(tmp_path)), client)


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_nothing_configured_is_no_servers_and_no_problems(tmp_path: Path) -> None:
    found = servers(tmp_path)
    assert found.servers == () and found.problems == ()
    assert found.server_for(tmp_path / "a.py") is None


def test_a_server_checks_the_files_of_its_extensions(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / ".tiller" / "settings.json", {"languageServers": {"pyright": PYRIGHT}})
    write(tmp_path / "user" / "settings.json", {"enabledLanguageServers": ["pyright"]})
    found = servers(tmp_path)
    server = found.server_for(ws / "pkg" / "m.PY")
    assert server is not None and server.name == "pyright"
    assert server.command == ("pyright-langserver", "--stdio")
    assert server.extensions == (".py", ".pyi")
    assert server.source == str(ws / ".tiller" / "settings.json")
    assert server.language_of(tmp_path / "m.pyi") == "python"
    assert found.server_for(tmp_path / "m.ts") is None


def test_initialization_options_win_over_the_files_whole(tmp_path: Path) -> None:
    write(tmp_path / "user" / "settings.json", {"languageServers": {"pyright": PYRIGHT}})
    client: dict[str, object] = {
        "pyright": {"command": ["basedpyright-langserver"], "extensions": [".py"]}
    }
    server = servers(tmp_path, client).server_for(tmp_path / "m.pyi")
    assert server is None  # the client's entry replaced the file's, extensions included


def test_a_bad_entry_is_a_problem_naming_its_file_and_the_others_still_work(
    tmp_path: Path,
) -> None:
    settings = tmp_path / "user" / "settings.json"
    write(
        settings,
        {
            "languageServers": {
                "pyright": PYRIGHT,
                "ts": {"command": "typescript-language-server --stdio", "extensions": [".ts"]},
                "rust": {"command": ["rust-analyzer"], "extensions": ["rs"]},
                "go": {"command": ["gopls"], "extensions": [".go"], "timeoutSeconds": 0},
                "odd": {"command": ["x"], "extensions": [".x"], "colour": "red"},
            }
        },
    )
    found = servers(tmp_path)
    # an unknown key is a notice, never the loss of the entry
    assert [s.name for s in found.servers] == ["pyright", "odd"]
    assert len(found.problems) == 4
    assert all(p.startswith(f"{settings}: languageServers.") for p in found.problems)
    assert "languageServers.ts: 'command' must be a non-empty list" in found.problems[0]
    assert "languageServers.rust: 'extensions' must be" in found.problems[1]
    assert "'timeoutSeconds' must be 1" in found.problems[2]
    assert found.problems[3].endswith("languageServers.odd: ignored colour")


def test_a_broken_override_does_not_fall_back_to_the_entry_it_replaced(tmp_path: Path) -> None:
    write(tmp_path / "user" / "settings.json", {"languageServers": {"pyright": PYRIGHT}})
    client: dict[str, object] = {"pyright": {}}
    found = servers(tmp_path, client)
    assert found.servers == ()
    assert found.problems and "initializationOptions.languageServers" in found.problems[0]


def test_a_checked_in_entry_runs_nothing_until_the_user_enables_it(tmp_path: Path) -> None:
    """A cloned repository's settings must not start a command at the first edit."""
    ws = tmp_path / "ws"
    checked_in = ws / ".tiller" / "settings.json"
    mine = {"command": ["my-pyright", "--stdio"], "extensions": [".py"]}
    write(tmp_path / "user" / "settings.json", {"languageServers": {"pyright": mine}})
    write(checked_in, {"languageServers": {"pyright": PYRIGHT, "ts": TS}})
    found = servers(tmp_path)
    assert [(s.name, s.command) for s in found.servers] == [("pyright", ("my-pyright", "--stdio"))]
    assert len(found.problems) == 2
    assert found.problems[1].startswith(f"{checked_in}: languageServers.ts: not enabled")
    assert '"enabledLanguageServers": ["ts"]' in found.problems[1]
    # enabled by name, or all of them, in the user's settings
    write(tmp_path / "user" / "settings.json", {"enabledLanguageServers": ["ts"]})
    found = servers(tmp_path)
    assert [s.name for s in found.servers] == ["ts"] and len(found.problems) == 1
    write(tmp_path / "user" / "settings.json", {"enableAllProjectLanguageServers": True})
    found = servers(tmp_path)
    assert [s.name for s in found.servers] == ["pyright", "ts"] and found.problems == ()
    # or in the trusted folder's own files (the one rule MCP's servers follow), never before
    # the folder is trusted
    write(tmp_path / "user" / "settings.json", {})
    write(checked_in, {"languageServers": {"ts": TS}})
    write(ws / ".claude" / "settings.local.json", {"enabledLanguageServers": ["ts"]})
    assert [s.name for s in servers(tmp_path).servers] == ["ts"]
    assert servers(tmp_path, trust=Trust(False, "not trusted yet")).servers == ()


def test_an_untrusted_folders_entries_never_start_even_when_the_user_enabled_them(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    write(tmp_path / "user" / "settings.json", {"enableAllProjectLanguageServers": True})
    write(ws / ".claude" / "settings.json", {"languageServers": {"py": PYRIGHT}})
    write(ws / ".claude" / "settings.local.json", {"languageServers": {"ts": TS}})
    found = servers(tmp_path, trust=Trust(False, "not trusted yet"))
    assert found.servers == ()
    assert all("the folder is not trusted" in p for p in found.problems)
    assert [s.name for s in servers(tmp_path).servers] == ["py", "ts"]


def test_initialization_options_must_hold_an_object_of_servers() -> None:
    assert parse_config({"languageServers": {"p": PYRIGHT}}).language_servers == {"p": PYRIGHT}
    with pytest.raises(ConfigError, match="languageServers"):
        parse_config({"languageServers": ["pyright"]})
