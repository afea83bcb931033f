"""Multi-root workspaces end to end: a client with two workspace folders (``ws``, the primary,
and ``api``), the real server, the fake Messages API and scripted tool calls. Folder-qualified
paths reach the second root and come back folder-qualified; an ambiguous path and escapes are
refused; the sandbox binds both roots and nothing else; one rewind covers both roots, a kill -9
mid-rewind is finished in both; the model learns the folders in the system prompt and of a
change by message; ``tiller run --add-dir``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_cli import CLI, cli_env
from test_rewind import allow, digest
from test_turn_basics import text, tool_use
from tiller.workspace.sandbox import bwrap_works

SECRET = "TOP-SECRET-VALUE"


@pytest.fixture
def api_root(tmp_path: Path) -> Path:
    root = tmp_path / "api"
    (root / "src").mkdir(parents=True)
    (root / "src" / "server.py").write_text("PORT = 8000\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    found = tmp_path / "outside"
    found.mkdir()
    (found / "secret.txt").write_text(f"{SECRET}\n")
    return found


def finished(tiller: Tiller, turn_id: str) -> dict[str, dict[str, Any]]:
    return {e["toolUseId"]: e for e in tiller.events_of("toolFinished", turn_id)}


def system_text(api: FakeMessagesAPI, index: int = -1) -> str:
    system = api.message_requests()[index].body["system"]
    return "".join(block["text"] for block in system)


async def test_folder_qualified_paths_reach_the_second_root_and_are_shown_so(
    start: Any, api: FakeMessagesAPI, workspace: Path, api_root: Path
) -> None:
    (workspace / "app.py").write_text("print('app')\n")
    tiller: Tiller = await start(permissionMode="acceptEdits", more_folders=[api_root])
    api.enqueue(
        {"content": [tool_use("read_file", "r1", path="api/src/server.py")]},
        {
            "content": [
                tool_use(
                    "edit_file",
                    "e1",
                    path="api/src/server.py",
                    old_string="8000",
                    new_string="9000",
                ),
                tool_use("write_file", "w1", path=str(api_root / "NEW.md"), content="new\n"),
                tool_use("write_file", "w2", path="notes.md", content="primary\n"),
            ]
        },
        {"content": [tool_use("grep", "g1", pattern="PORT|print")]},
        {"content": [text("done")]},
    )
    ended = await tiller.run("work in both folders")
    assert ended["outcome"] == "completed", ended
    assert (api_root / "src" / "server.py").read_text() == "PORT = 9000\n"
    assert (api_root / "NEW.md").read_text() == "new\n" and not (workspace / "api").exists()
    assert (workspace / "notes.md").read_text() == "primary\n"
    done = finished(tiller, ended["turnId"])
    assert all(e["status"] == "ok" for e in done.values()), done
    assert "PORT = 8000" in done["r1"]["output"]
    assert "api/NEW.md" in done["w1"]["output"]  # an absolute path comes back qualified
    assert "notes.md" in done["w2"]["output"] and "api/" not in done["w2"]["output"]
    assert done["g1"]["output"].splitlines() == [
        "app.py:1:print('app')",
        "api/src/server.py:1:PORT = 9000",
    ]
    system = system_text(api)
    assert "<workspace-folders>" in system
    assert f"- ws: {workspace} (primary)" in system and f"- api: {api_root}" in system


async def test_an_ambiguous_path_and_paths_outside_every_root_are_refused(
    start: Any, api: FakeMessagesAPI, workspace: Path, api_root: Path, outside: Path
) -> None:
    (workspace / "api").mkdir()  # the primary root has an entry named like the folder
    (api_root / "escape").symlink_to(outside)
    tiller: Tiller = await start(more_folders=[api_root])
    api.enqueue(
        {
            "content": [
                tool_use("read_file", "amb", path="api/src/server.py"),
                tool_use("read_file", "out", path=str(outside / "secret.txt")),
                tool_use("read_file", "up", path="./api/../../outside/secret.txt"),
                tool_use("read_file", "link", path=str(api_root / "escape" / "secret.txt")),
                tool_use("list_files", "ls", path=str(api_root / "escape")),
                tool_use("read_file", "abs", path=str(api_root / "src" / "server.py")),
            ]
        },
        {"content": [text("refused")]},
    )
    ended = await tiller.run("try the edges")
    done = finished(tiller, ended["turnId"])
    assert (done["amb"]["status"] == "error") and "ambiguous" in done["amb"]["output"]
    assert "'./api/src/server.py'" in done["amb"]["output"]
    assert str(api_root / "src" / "server.py") in done["amb"]["output"]
    assert (done["out"]["status"] == "error") and "outside every workspace folder" in done["out"][
        "output"
    ]
    for call in ("up", "link", "ls"):
        assert (done[call]["status"] == "error") and "outside" in done[call]["output"], done[call]
    assert done["abs"]["status"] == "ok" and "PORT = 8000" in done["abs"]["output"]
    sent = json.dumps([r.body for r in api.message_requests()])
    assert SECRET not in sent


async def test_a_read_only_command_in_another_root_runs_unasked_and_outside_is_asked(
    start: Any, api: FakeMessagesAPI, workspace: Path, api_root: Path, outside: Path
) -> None:
    """Issue 22 item 5: the bash read-only check knew only the primary root, so reading the
    second root was asked like reading a stranger's folder."""
    tiller: Tiller = await start(more_folders=[api_root])  # default mode: the rest is asked
    api.enqueue(
        {
            "content": [
                tool_use("bash", "cat", command=f"cat {api_root}/src/server.py"),
                tool_use("bash", "grep", command="grep -rn PORT ../api/src"),
                tool_use("bash", "out", command=f"cat {outside}/secret.txt"),
            ]
        },
        {"content": [text("read")]},
    )
    ended = await tiller.run("read the api folder")
    done = finished(tiller, ended["turnId"])
    assert done["cat"]["status"] == "ok" and "PORT = 8000" in done["cat"]["output"], done
    assert done["grep"]["status"] == "ok" and "PORT = 8000" in done["grep"]["output"], done
    asked = [p["preview"]["command"] for kind, p in tiller.asked if kind == "tiller/confirmTool"]
    assert asked == [f"cat {outside}/secret.txt"]  # outside every root: asked (and denied)
    assert done["out"]["status"] != "ok" and SECRET not in done["out"]["output"]


@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap does not work here")
async def test_a_sandboxed_command_writes_in_every_root_and_nowhere_else(
    start: Any, api: FakeMessagesAPI, workspace: Path, api_root: Path, outside: Path
) -> None:
    tiller: Tiller = await start(sandbox="always", more_folders=[api_root])
    tiller.on_confirm = allow
    leak = Path("/var/tmp") / f"tiller-leak-{workspace.parent.name}.txt"  # host's /, not /tmp
    command = (
        f"echo primary > here.txt; echo second > {api_root}/there.txt; "
        f"echo nope > {outside}/leak.txt; echo nope > {leak}; true"
    )
    api.enqueue({"content": [tool_use("bash", "b1", command=command)]}, {"content": [text("ok")]})
    ended = await tiller.run("write in both")
    assert ended["outcome"] == "completed", ended
    assert (await tiller.request("tiller/getState"))["sandbox"] == "bwrap"
    assert (workspace / "here.txt").read_text() == "primary\n"
    assert (api_root / "there.txt").read_text() == "second\n"
    assert not (outside / "leak.txt").exists() and not leak.exists()
    output = finished(tiller, ended["turnId"])["b1"]["output"]
    assert f"{leak}: Read-only file system" in output


async def two_root_turn(tiller: Tiller, api: FakeMessagesAPI) -> str:
    api.enqueue(
        {
            "content": [
                tool_use("read_file", "r1", path="a.txt"),
                tool_use("read_file", "r2", path="api/b.txt"),
            ]
        },
        {
            "content": [
                tool_use("write_file", "w1", path="a.txt", content="changed a\n"),
                tool_use("write_file", "w2", path="api/b.txt", content="changed b\n"),
                tool_use("write_file", "w3", path="api/new.txt", content="new\n"),
            ]
        },
        {"content": [text("changed both")]},
    )
    ended = await tiller.run("change both roots")
    assert ended["outcome"] == "completed", ended
    return str(ended["turnId"])


def seed_two(workspace: Path, api_root: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    (api_root / "b.txt").write_text("b\n")


async def test_one_rewind_undoes_a_turn_in_both_roots_and_undo_redoes_it(
    start: Any, api: FakeMessagesAPI, workspace: Path, api_root: Path
) -> None:
    seed_two(workspace, api_root)
    before = (digest(workspace), digest(api_root))
    tiller: Tiller = await start(permissionMode="acceptEdits", more_folders=[api_root])
    turn = await two_root_turn(tiller, api)
    after = (digest(workspace), digest(api_root))
    listed = (await tiller.request("tiller/checkpoints"))["checkpoints"]
    assert [c["turnId"] for c in listed] == [turn] and listed[0]["changedFiles"] == 3
    preview = await tiller.request(
        "tiller/rewind", {"turnId": turn, "files": True, "conversation": False, "dryRun": True}
    )
    assert sorted(preview["reverted"]) == ["a.txt", "api/b.txt"]
    assert preview["deleted"] == ["api/new.txt"]
    done = await tiller.request(
        "tiller/rewind", {"turnId": turn, "files": True, "conversation": False}
    )
    assert (digest(workspace), digest(api_root)) == before
    assert sorted(done["reverted"]) == ["a.txt", "api/b.txt"]
    await tiller.request("tiller/undoRewind", {"undoId": done["undoId"]})
    assert (digest(workspace), digest(api_root)) == after


async def test_a_rewind_cut_by_kill_9_between_the_roots_is_finished_in_both(
    start: Any, api: FakeMessagesAPI, workspace: Path, api_root: Path, tmp_path: Path
) -> None:
    seed_two(workspace, api_root)
    before = (digest(workspace), digest(api_root))
    tiller: Tiller = await start(permissionMode="acceptEdits", more_folders=[api_root])
    turn = await two_root_turn(tiller, api)
    await tiller.request("tiller/checkpoints")  # the closing snapshot is done
    session_id = (await tiller.request("tiller/getState"))["sessionId"]
    server = tiller.client._server
    assert server is not None
    server.kill()
    await server.wait()

    # What kill -9 leaves after the first root was restored: the whole restore's journal.
    with sqlite3.connect(tmp_path / "data" / "sessions.sqlite3") as db:
        (target,) = db.execute(
            "SELECT before_commit FROM checkpoints WHERE turn_id=?", (turn,)
        ).fetchone()
    assert set(json.loads(target)) == {str(workspace), str(api_root)}  # one commit per root
    shadows = {p.name: p for p in (tmp_path / "data" / "checkpoints").glob("*.git")}
    (primary,) = [p for n, p in shadows.items() if n.startswith("ws-")]
    (primary / "tiller-roots-restore.journal").write_text(target)
    (workspace / "a.txt").write_text("a\n")  # the primary root was restored, api not yet

    again: Tiller = await start(permissionMode="acceptEdits", more_folders=[api_root])
    resumed = await again.request("tiller/session/resume", {"sessionId": session_id})
    assert resumed["sessionId"] == session_id
    api.enqueue({"content": [text("just talking")]})
    ended = await again.run("hello")
    assert (digest(workspace), digest(api_root)) == before
    assert not (primary / "tiller-roots-restore.journal").exists()
    notices = [e["text"] for e in again.events_of("notice", ended["turnId"])]
    assert any("interrupted" in n for n in notices), notices


def folders_changed(tiller: Tiller, added: list[Path], removed: list[Path]) -> None:
    tiller.client.protocol.notify(
        types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS,
        types.DidChangeWorkspaceFoldersParams(
            types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(p.as_uri(), p.name) for p in added],
                removed=[types.WorkspaceFolder(p.as_uri(), p.name) for p in removed],
            )
        ),
    )


def prompt_texts(api: FakeMessagesAPI, index: int) -> list[str]:
    """The text blocks of the last user message of request ``index``."""
    content = api.message_requests()[index].body["messages"][-1]["content"]
    return [b["text"] for b in content if b.get("type") == "text"]


async def test_a_resumed_session_gets_its_stored_folders_back_unless_the_client_names_some(
    start: Any, api: FakeMessagesAPI, workspace: Path, api_root: Path, tmp_path: Path
) -> None:
    """Issue 22 item 5: roots were not stored with a session, so a session resumed by a
    client that names no second folder (``tiller chat --resume`` without ``--add-dir``) lost
    its second root, and every folder-qualified path the model had learnt."""
    old = tmp_path / "old"
    old.mkdir()
    tiller: Tiller = await start(permissionMode="acceptEdits", more_folders=[api_root, old])
    api.enqueue({"content": [text("three folders")]})
    await tiller.run("first")
    session_id = (await tiller.request("tiller/getState"))["sessionId"]
    old.rmdir()  # gone by the time the session is resumed

    again: Tiller = await start(permissionMode="acceptEdits")  # names the primary folder only
    await again.request("tiller/session/resume", {"sessionId": session_id})
    await again.wait_for(
        lambda: any(f"gone: old ({old})" in e["text"] for e in again.events_of("notice"))
    )
    api.enqueue(
        {"content": [tool_use("read_file", "r1", path="api/src/server.py")]},
        {"content": [text("read")]},
    )
    ended = await again.run("second")
    assert "PORT = 8000" in finished(again, ended["turnId"])["r1"]["output"]
    told = prompt_texts(api, -2)  # the folder that is gone is the one change to tell
    assert told[0].startswith("The workspace folders changed.") and told[-1] == "second"
    assert f"- api: {api_root}" in told[0] and "- old:" not in told[0]

    web = tmp_path / "web"
    web.mkdir()
    third: Tiller = await start(permissionMode="acceptEdits", more_folders=[web])
    await third.request("tiller/session/resume", {"sessionId": session_id})
    api.enqueue(
        {"content": [tool_use("read_file", "r2", path="api/src/server.py")]},
        {"content": [text("gone")]},
    )
    ended = await third.run("third")
    assert finished(third, ended["turnId"])["r2"]["status"] == "error"  # api is no root now
    told = prompt_texts(api, -2)
    assert told[0].startswith("The workspace folders changed.") and told[-1] == "third"
    assert f"- web: {web}" in told[0] and "- api:" not in told[0]


async def test_a_rewind_over_a_folder_no_longer_in_the_workspace_is_refused_and_changes_nothing(
    start: Any, api: FakeMessagesAPI, workspace: Path, api_root: Path
) -> None:
    seed_two(workspace, api_root)
    before = (digest(workspace), digest(api_root))
    tiller: Tiller = await start(permissionMode="acceptEdits", more_folders=[api_root])
    turn = await two_root_turn(tiller, api)
    await tiller.request("tiller/checkpoints")  # the closing snapshot is done
    after = (digest(workspace), digest(api_root))
    messages = len(api.message_requests()[-1].body["messages"])

    folders_changed(tiller, [], [api_root])
    await tiller.wait_for(
        lambda: any("Workspace folders" in e["text"] for e in tiller.events_of("notice"))
    )
    for dry_run in (True, False):
        with pytest.raises(JsonRpcException) as refused:
            await tiller.request(
                "tiller/rewind",
                {"turnId": turn, "files": True, "conversation": True, "dryRun": dry_run},
            )
        assert refused.value.code == -32602
        assert f"the workspace folder {api_root}, which is not in the workspace now" in str(
            refused.value
        )
    assert (digest(workspace), digest(api_root)) == after  # neither root was touched
    api.enqueue({"content": [text("still here")]})
    await tiller.run("after the refusal")
    assert len(api.message_requests()[-1].body["messages"]) == messages + 2  # history kept

    folders_changed(tiller, [api_root], [])  # the folder back: the rewind goes through
    await tiller.wait_for(
        lambda: sum("Workspace folders" in e["text"] for e in tiller.events_of("notice")) == 2
    )
    await tiller.request("tiller/rewind", {"turnId": turn, "files": True, "conversation": True})
    assert (digest(workspace), digest(api_root)) == before


async def test_a_folder_added_mid_session_reaches_the_model_as_a_message(
    start: Any, api: FakeMessagesAPI, workspace: Path, api_root: Path
) -> None:
    tiller: Tiller = await start()
    api.enqueue({"content": [text("one folder")]})
    await tiller.run("first")
    first_system = system_text(api)
    assert "<workspace-folders>" not in first_system
    tiller.client.protocol.notify(
        types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS,
        types.DidChangeWorkspaceFoldersParams(
            types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(api_root.as_uri(), "api")], removed=[]
            )
        ),
    )
    await tiller.wait_for(
        lambda: any("Workspace folders" in e["text"] for e in tiller.events_of("notice"))
    )
    api.enqueue(
        {"content": [tool_use("read_file", "r1", path="api/src/server.py")]},
        {"content": [text("two folders")]},
    )
    ended = await tiller.run("second")
    assert "PORT = 8000" in finished(tiller, ended["turnId"])["r1"]["output"]
    requests = api.message_requests()
    assert system_text(api) == first_system  # the prefix never changes
    told = requests[-2].body["messages"][-1]["content"]
    assert told[0]["text"].startswith("The workspace folders changed.")
    assert f"- api: {api_root}" in told[0]["text"] and told[-1]["text"] == "second"
    api.enqueue({"content": [text("three")]})
    await tiller.run("third")  # told once: the next prompt carries no listing
    last = api.message_requests()[-1].body["messages"][-1]["content"]
    assert [b["text"] for b in last] == ["third"]


async def test_tiller_run_add_dir_makes_a_second_root(
    api: FakeMessagesAPI, workspace: Path, api_root: Path, tmp_path: Path
) -> None:
    import asyncio
    import subprocess

    api.enqueue(
        {"content": [tool_use("write_file", "w1", path="api/from_cli.txt", content="cli\n")]},
        {"content": [text("wrote it")]},
    )
    process = await asyncio.create_subprocess_exec(
        *CLI, "--workspace", str(workspace), "--add-dir", str(api_root), "--mode", "acceptEdits",
        "--base-url", api.base_url, "--model", "claude-test-1",
        "write into api, like @api/src/server.py",
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=cli_env(tmp_path / "data", "test-key"), cwd=workspace,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, (out, err)
    assert (api_root / "from_cli.txt").read_text() == "cli\n"
    assert "api/from_cli.txt" in out.decode()
    assert f"- api: {api_root}" in system_text(api, 0)
    first = api.message_requests()[0].body["messages"][0]["content"]
    assert first[0]["text"].startswith('<context kind="file" name="api/src/server.py">')
    assert "PORT = 8000" in first[0]["text"]
