"""MCP consent through the real server: a server of the workspace's ``.mcp.json`` starts only
once the folder is trusted and the user approved it, in any settings file (the folder's
``.claude/settings.local.json`` included, where Claude Code keeps the user's yes); until then
the session says so when it opens, once per server, naming the file and key to edit.

Each server leaves a mark file if it starts; a test looks only after its turn (or the request
that would start the servers) ended, so an absent mark means it never ran."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_turn_basics import text

UNTRUSTED: dict[str, Any] = {"workspaceTrust": None}  # nobody decided: not trusted yet


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def marking(mark: Path) -> dict[str, Any]:
    """A stdio server entry whose command leaves ``mark`` (then exits: it fails to start)."""
    return {"command": sys.executable, "args": ["-c", f"open({str(mark)!r}, 'w')"]}


async def notices_after_a_turn(tiller: Tiller, api: FakeMessagesAPI) -> list[str]:
    api.enqueue({"content": [text("ok")]})
    ended = await tiller.run("hello")
    assert ended["outcome"] == "completed"
    return [e["text"] for e in tiller.events_of("notice")]


async def states(tiller: Tiller) -> dict[str, tuple[str, str]]:
    listed = await tiller.request("tiller/mcp/list", {"start": True})
    return {s["name"]: (s["state"], s.get("error", "")) for s in listed["servers"]}


async def test_a_project_server_not_approved_is_told_once_at_session_start(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    write(workspace / ".mcp.json", {"mcpServers": {
        "db": marking(tmp_path / "db"), "docs": marking(tmp_path / "docs"),
    }})  # fmt: skip
    tiller = await start()  # trusted (the harness's default)
    told = [n for n in await notices_after_a_turn(tiller, api) if "is not started" in n]
    assert len(told) == 2, told  # one per server
    (db,) = [n for n in told if "server 'db'" in n]
    assert str(workspace / ".mcp.json") in db
    assert 'add "enabledMcpjsonServers": ["db"] to .claude/settings.local.json' in db
    assert (await states(tiller))["db"][0] == "blocked"
    assert not (tmp_path / "db").exists() and not (tmp_path / "docs").exists()


async def test_enabled_mcpjson_servers_in_the_local_settings_file_starts_the_server(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    write(workspace / ".mcp.json", {"mcpServers": {
        "db": marking(tmp_path / "db"), "docs": marking(tmp_path / "docs"),
    }})  # fmt: skip
    write(workspace / ".claude" / "settings.local.json", {"enabledMcpjsonServers": ["db"]})
    tiller = await start()
    told = [n for n in await notices_after_a_turn(tiller, api) if "is not started" in n]
    assert [n for n in told if "server 'db'" in n] == []
    assert len(told) == 1 and "server 'docs'" in told[0]
    found = await states(tiller)
    assert found["db"][0] == "failed"  # it ran: the mark, then it exited
    assert (tmp_path / "db").exists()
    assert found["docs"][0] == "blocked" and not (tmp_path / "docs").exists()


async def test_an_untrusted_folder_starts_no_approved_server_and_says_trust_then_approve(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    write(workspace / ".mcp.json", {"mcpServers": {"db": marking(tmp_path / "db")}})
    write(workspace / ".claude" / "settings.local.json", {"enableAllProjectMcpServers": True})
    tiller = await start(**UNTRUSTED)
    told = [n for n in await notices_after_a_turn(tiller, api) if "is not started" in n]
    assert len(told) == 1, told
    assert "the folder is not trusted" in told[0] and "/trust yes" in told[0]
    assert 'add "enabledMcpjsonServers": ["db"] to .claude/settings.local.json' in told[0]
    assert (await states(tiller))["db"][0] == "blocked"
    assert not (tmp_path / "db").exists()


async def test_a_disabled_project_server_is_not_told_as_waiting_for_approval(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    write(workspace / ".mcp.json", {"mcpServers": {"db": marking(tmp_path / "db")}})
    write(workspace / ".claude" / "settings.local.json", {
        "enableAllProjectMcpServers": True, "disabledMcpjsonServers": ["db"],
    })  # fmt: skip
    tiller = await start()
    told = await notices_after_a_turn(tiller, api)
    assert not [n for n in told if "is not started" in n], told
    state, why = (await states(tiller))["db"]
    assert state == "blocked" and "disabledMcpjsonServers" in why
    assert not (tmp_path / "db").exists()
