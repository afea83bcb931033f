"""Workspace trust: one decision per folder, kept in the user's own state, Claude Code's yes
honoured, the nearest decision winning, nothing trusted by a file the workspace could write."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from tiller.extend.trust import NOT_YET, Trust, decided, record, trust_file


def env_of(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "TILLER_CONFIG_DIR": str(tmp_path / "config")}


def claude_says(tmp_path: Path, projects: dict[str, object]) -> None:
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / ".claude.json").write_text(json.dumps({"projects": projects}))


def test_a_folder_nobody_decided_is_not_trusted(tmp_path: Path) -> None:
    assert decided(tmp_path / "ws", env_of(tmp_path)) == NOT_YET


def test_a_recorded_decision_covers_the_folder_and_its_subfolders_only(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    path = record(tmp_path / "ws", True, env)
    assert path == trust_file(env) == tmp_path / "config" / "trusted-folders.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert decided(tmp_path / "ws", env) == Trust(True, "tiller trust")
    assert decided(tmp_path / "ws" / "sub", env) == Trust(True, "tiller trust")
    assert decided(tmp_path / "wsx", env) == NOT_YET  # a name that starts alike is not beneath
    assert decided(tmp_path, env) == NOT_YET


def test_the_nearest_decision_wins_and_a_no_is_kept(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    record(tmp_path, True, env)
    record(tmp_path / "ws" / "vendor", False, env)
    assert decided(tmp_path / "ws", env).trusted
    assert decided(tmp_path / "ws" / "vendor" / "lib", env) == Trust(False, "tiller trust")


def test_a_folder_claude_code_trusts_is_trusted_without_asking_again(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    claude_says(tmp_path, {str(tmp_path / "ws"): {"hasTrustDialogAccepted": True},
                           str(tmp_path / "other"): {"hasTrustDialogAccepted": False},
                           "relative/path": {"hasTrustDialogAccepted": True}})  # fmt: skip
    assert decided(tmp_path / "ws" / "pkg", env) == Trust(True, "Claude Code")
    assert decided(tmp_path / "other", env) == NOT_YET
    # Tiller's own "no" for the same folder wins over Claude Code's "yes"
    record(tmp_path / "ws", False, env)
    assert decided(tmp_path / "ws", env) == Trust(False, "tiller trust")


def test_a_link_is_decided_where_it_leads(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    record(tmp_path / "link", True, env)
    assert decided(tmp_path / "real", env).trusted


def test_a_broken_record_trusts_nothing_and_a_new_decision_replaces_it(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    trust_file(env).parent.mkdir(parents=True)
    trust_file(env).write_text('{"folders": {"/": {"trusted": "yes"}}, "version": 1')
    assert decided(tmp_path / "ws", env) == NOT_YET
    claude_says(tmp_path, {})
    (tmp_path / "home" / ".claude.json").write_text("{not json")
    assert decided(tmp_path / "ws", env) == NOT_YET
    record(tmp_path / "ws", True, env)
    assert decided(tmp_path / "ws", env).trusted
