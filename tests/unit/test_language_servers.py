"""A workspace's language servers as a source of diagnostics: what a missing program, a
crashing server and a file no server checks give (tests/e2e/fake_language_server.py plays the
server)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from tiller.extend.language_servers.config import LanguageServersConfig, parse_entry
from tiller.extend.language_servers.diagnostics import MAX_FAILURES, LanguageServers
from tiller.workspace.diagnostics import NONE, NoDiagnostics
from tiller.workspace.tool_env import EnvRules

FAKE = Path(__file__).parents[1] / "e2e" / "fake_language_server.py"


def servers(workspace: Path, command: list[str]) -> LanguageServers:
    entry = parse_entry("fake", {"command": command, "extensions": [".py"]}, "test")
    return LanguageServers(LanguageServersConfig((entry,)), workspace, EnvRules())


async def test_a_missing_program_is_told_once_and_the_server_stays_off(tmp_path: Path) -> None:
    source = servers(tmp_path, ["no-such-language-server-here", "--stdio"])
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    first = await source.diagnostics("t", (path,), settle=False)
    assert isinstance(first, NoDiagnostics)
    assert first.notice == (
        "Language server fake cannot start: command not found: no-such-language-server-here: "
        "no diagnostics for this edit; it is off until Tiller restarts (edits of .py files get "
        "no diagnostics)"
    )
    assert await source.diagnostics("t", (path,), settle=True) is NONE  # not tried again


async def test_a_server_that_keeps_crashing_is_restarted_then_left_off(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    source = servers(tmp_path, [sys.executable, str(FAKE), "crash", str(marks)])
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    notices = []
    for _ in range(MAX_FAILURES):
        found = await source.diagnostics("t", (path,), settle=True)
        assert isinstance(found, NoDiagnostics) and found.notice is not None
        notices.append(found.notice)
    assert all("Language server fake exited (code 3)" in n for n in notices)
    assert all(n.endswith("it starts again at the next edit") for n in notices[:-1])
    assert notices[-1].endswith(
        "it is off until Tiller restarts (edits of .py files get no diagnostics)"
    )
    (marks / "started").unlink()
    assert await source.diagnostics("t", (path,), settle=True) is NONE
    assert not (marks / "started").exists()  # off: not started again


async def test_a_file_no_server_checks_and_a_missing_file_cost_nothing(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    source = servers(tmp_path, [sys.executable, str(FAKE), "pull", str(marks)])
    (tmp_path / "notes.md").write_text("# notes\n")
    assert await source.diagnostics("t", (tmp_path / "notes.md",), settle=False) is NONE
    assert await source.diagnostics("t", (tmp_path / "new.py",), settle=False) == ()
    assert not (marks / "started").exists()
    await source.close()


async def test_a_started_server_slow_to_report_is_kept_and_asked_again(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    command = [sys.executable, str(FAKE), "stall", str(marks)]
    entry = parse_entry("fake", {"command": command, "extensions": [".py"]}, "test")
    source = LanguageServers(LanguageServersConfig((entry,)), tmp_path, EnvRules())
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    assert await source.diagnostics("t", (path,), settle=False) == ()  # started, answered
    pid = (marks / "started").read_text()
    # From now on it never answers: each check waits its (now short) timeout.
    source.config = LanguageServersConfig((replace(entry, timeout_seconds=1),))
    path.write_text("x = 2\n")
    first = await source.diagnostics("t", (path,), settle=True)
    assert isinstance(first, NoDiagnostics) and first.notice is not None
    assert first.notice.endswith(
        "within 1s: no diagnostics for this edit; the next edit asks it again"
    )
    path.write_text("x = 3\n")
    second = await source.diagnostics("t", (path,), settle=True)
    assert isinstance(second, NoDiagnostics)
    assert (marks / "started").read_text() == pid  # the same process, asked again
    third = await source.diagnostics("t", (path,), settle=True)
    assert isinstance(third, NoDiagnostics) and third.notice is not None
    assert "off until Tiller restarts" in third.notice  # three in a row
    await source.close()
