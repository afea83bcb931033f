"""Workspace trust: one decision per folder, kept in the user's own state, Claude Code's yes
honoured, the nearest decision winning, nothing trusted by a file the workspace could write."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from tiller.extend.trust import NOT_YET, Trust, decided, record, trust_file


def env_of(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "TILLER_CONFIG_DIR": str(tmp_path / "config")}


def claude_says(tmp_path: Path, projects: dict[str, object]) -> None:
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / ".claude.json").write_text(json.dumps({"projects": projects}))


def test_a_folder_nobody_decided_is_not_trusted(tmp_path: Path) -> None:
    found = decided(tmp_path / "ws", env_of(tmp_path))
    assert found == NOT_YET and not found.trusted
    assert found.describe() == "not trusted (not trusted yet)"
    assert Trust(True, "tiller trust").describe() == "trusted (tiller trust)"


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


def test_the_record_is_sorted_json_in_a_folder_only_the_user_may_open(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home)}  # ~/.config does not exist yet
    old = os.umask(0o022)
    try:
        before = int(time.time())
        path = record(tmp_path / "ws", True, env)
    finally:
        os.umask(old)
    assert path == home / ".config" / "tiller" / "trusted-folders.json"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    text = path.read_text()
    data = json.loads(text)
    at = data["folders"][str(tmp_path / "ws")]["at"]
    assert before <= at <= time.time()
    assert data == {"version": 1, "folders": {str(tmp_path / "ws"): {"trusted": True, "at": at}}}
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n"  # readable, stable diffs


def test_a_record_that_cannot_be_replaced_leaves_no_temporary_file(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    (trust_file(env) / "in-the-way").mkdir(parents=True)  # a folder where the record goes
    with pytest.raises(OSError):
        record(tmp_path / "ws", True, env)
    assert os.listdir(trust_file(env).parent) == ["trusted-folders.json"]
    assert decided(tmp_path / "ws", env) == NOT_YET


def test_an_entry_that_says_neither_true_nor_false_decides_nothing(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    trust_file(env).parent.mkdir(parents=True)
    folders = {str(tmp_path / "ws"): {"trusted": "yes"}, str(tmp_path / "other"): "trusted"}
    trust_file(env).write_text(json.dumps({"version": 1, "folders": folders}))
    assert decided(tmp_path / "ws", env) == NOT_YET
    assert decided(tmp_path / "other", env) == NOT_YET
