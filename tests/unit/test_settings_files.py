"""The settings files in Claude Code's layout plus Tiller's own, by scope."""

from __future__ import annotations

from pathlib import Path

from tiller.extend.settings_files import problems, read_settings_files


def _env(home: Path) -> dict[str, str]:
    return {"HOME": str(home)}


def test_files_are_read_lowest_precedence_first(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    for path, body in [
        (home / ".claude" / "settings.json", '{"a": "user-claude"}'),
        (home / ".config" / "tiller" / "settings.json", '{"a": "user-tiller"}'),
        (ws / ".claude" / "settings.json", '{"a": "workspace"}'),
        (ws / ".tiller" / "settings.local.json", '{"a": "local"}'),
    ]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    files = read_settings_files(ws, _env(home))
    assert [(f.scope, f.data["a"]) for f in files] == [
        ("user", "user-claude"),
        ("user", "user-tiller"),
        ("workspace", "workspace"),
        ("local", "local"),
    ]
    assert problems(files) == []


def test_a_broken_file_is_named_and_hides_no_other(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / ".claude" / "settings.json").write_text("{not json")
    (ws / ".claude" / "settings.local.json").write_text("[1, 2]")
    (ws / ".tiller").mkdir()
    (ws / ".tiller" / "settings.json").write_text('{"ok": true}')
    files = read_settings_files(ws, _env(tmp_path / "nohome"))
    assert [f.data for f in files] == [{}, {"ok": True}, {}]
    found = problems(files)
    assert len(found) == 2
    assert "settings.json: not JSON" in found[0]
    assert "settings.local.json: not a JSON object" in found[1]


def test_config_dirs_follow_the_environment(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    claude, tiller = tmp_path / "c", tmp_path / "t"
    claude.mkdir()
    tiller.mkdir()
    (claude / "settings.json").write_text('{"from": "claude"}')
    (tiller / "settings.json").write_text('{"from": "tiller"}')
    env = {
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(claude),
        "TILLER_CONFIG_DIR": str(tiller),
    }
    assert [f.data["from"] for f in read_settings_files(ws, env)] == ["claude", "tiller"]
