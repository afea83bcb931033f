"""Checkpoints and rewind: whatever wrote the files (edit tools or shell commands), a rewind
puts the workspace back byte for byte, and an undo puts the later state back. Answers say what
happens to each file; the slash commands (/rewind --dry-run, /undo) serve terminal clients; the
todo board and the mode words follow (users' reports)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_turn_basics import text, tool_use


def digest(root: Path) -> dict[str, tuple[str, str]]:
    """Every path under ``root`` (nested ``.git`` internals excepted) with its mode and content.
    A file that goes while it is walked (a lock file of the server's own shadow repository, when
    the data dir is inside the workspace) is not part of it."""
    found: dict[str, tuple[str, str]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if "/.git/" in f"/{rel}/" and not rel.endswith("/.git") and rel != ".git":
            continue
        try:
            found[rel] = _entry(path)
        except FileNotFoundError:
            continue
    return found


def _entry(path: Path) -> tuple[str, str]:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        return ("dir", "")
    return (oct(st.st_mode & 0o777), hashlib.sha256(path.read_bytes()).hexdigest())


def _touch(path: Path) -> Path:
    path.write_bytes(b"")
    return path


async def allow(params: dict[str, Any]) -> dict[str, Any]:
    return {"decision": "allow"}


def seed(workspace: Path) -> None:
    (workspace / "app.py").write_text("print('v1')\n")
    (workspace / "keep.txt").write_text("unchanged\n")
    (workspace / "old_name.txt").write_text("to be renamed\n")
    (workspace / "doomed.txt").write_text("to be deleted\n")
    (workspace / "script.sh").write_text("#!/bin/sh\necho hi\n")
    os.symlink("keep.txt", workspace / "link-to-keep")
    nested = workspace / "vendor" / "lib"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    (nested / "lib.py").write_text("VERSION = 1\n")


SHELL_WORK = (
    "mv old_name.txt new_name.txt && rm doomed.txt && chmod +x script.sh && "
    "mkdir -p out && echo built > out/result.txt && echo 'VERSION = 2' > vendor/lib/lib.py && "
    "ln -sfn app.py link-to-keep"
)


async def agent_turn(tiller: Tiller, api: FakeMessagesAPI) -> str:
    api.enqueue(
        {"content": [tool_use("read_file", "r1", path="app.py")]},
        {
            "content": [
                tool_use("edit_file", "e1", path="app.py", old_string="v1", new_string="v2"),
                tool_use("write_file", "w1", path="notes/todo.md", content="# todo\n"),
            ]
        },
        {"content": [tool_use("bash", "b1", command=SHELL_WORK)]},
        {"content": [text("All done.")]},
    )
    ended = await tiller.run("change everything", timeout=30)
    assert ended["outcome"] == "completed", ended
    return str(ended["turnId"])


async def test_rewind_restores_edits_and_shell_side_effects_and_undo_brings_them_back(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    seed(workspace)
    tiller: Tiller = await start(permissionMode="acceptEdits")
    tiller.on_confirm = allow
    before = digest(workspace)
    turn = await agent_turn(tiller, api)
    after = digest(workspace)
    assert after != before and (workspace / "out" / "result.txt").exists()

    listed = (await tiller.request("tiller/checkpoints"))["checkpoints"]
    assert [c["turnId"] for c in listed] == [turn]
    assert listed[0]["prompt"] == "change everything"
    assert listed[0]["changedFiles"] >= 7

    done = await tiller.request(
        "tiller/rewind", {"turnId": turn, "files": True, "conversation": False}
    )
    assert digest(workspace) == before
    assert "app.py" in done["changed"] and "out/result.txt" in done["added"]
    assert "doomed.txt" in done["removed"] and "old_name.txt" in done["removed"]
    assert (workspace / "vendor" / "lib" / ".git").is_dir()  # the nested repo is untouched

    undone = await tiller.request("tiller/undoRewind", {"undoId": done["undoId"]})
    assert digest(workspace) == after
    assert "out/result.txt" in undone["removed"] or "out/result.txt" in undone["changed"]
    with pytest.raises(JsonRpcException) as again:
        await tiller.request("tiller/undoRewind", {"undoId": done["undoId"]})
    assert again.value.code == -32602


async def test_rewinding_the_conversation_cuts_the_history_before_the_turn(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start()
    api.enqueue({"content": [text("first answer")]})
    await tiller.run("first question")
    api.enqueue({"content": [text("second answer")]})
    second = await tiller.run("second question")
    done = await tiller.request(
        "tiller/rewind", {"turnId": second["turnId"], "files": False, "conversation": True}
    )
    assert done["changed"] == [] and done["undoId"]
    api.enqueue({"content": [text("third answer")]})
    await tiller.run("third question")
    sent = api.message_requests()[-1].body["messages"]
    texts = [b.get("text") for m in sent for b in m["content"]]
    assert "second question" not in texts and "first question" in texts
    await tiller.request("tiller/undoRewind", {"undoId": done["undoId"]})
    api.enqueue({"content": [text("fourth answer")]})
    await tiller.run("fourth question")
    sent = api.message_requests()[-1].body["messages"]
    texts = [b.get("text") for m in sent for b in m["content"]]
    assert "second question" in texts


async def test_dry_run_lists_files_the_user_changed_after_the_turn_and_changes_nothing(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("a1\n")
    tiller: Tiller = await start(permissionMode="acceptEdits")
    api.enqueue(
        {"content": [tool_use("write_file", "w1", path="b.txt", content="agent\n")]},
        {"content": [text("wrote b")]},
    )
    turn = (await tiller.run("write b"))["turnId"]
    await tiller.request("tiller/checkpoints")
    (workspace / "b.txt").write_text("the user edited this\n")  # after the agent's turn
    snapshot = digest(workspace)
    preview = await tiller.request(
        "tiller/rewind", {"turnId": turn, "files": True, "conversation": True, "dryRun": True}
    )
    assert preview["added"] == ["b.txt"] and preview["userChanged"] == ["b.txt"]
    assert "undoId" not in preview
    assert digest(workspace) == snapshot


async def test_rewind_is_refused_while_a_turn_runs(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    api.enqueue({"content": [text("first")]})
    first = await tiller.run("first")
    api.enqueue({"content": [text("slow")], "hangAfterEvents": 4})
    await tiller.prompt("second")
    await api.wait_hanging()
    with pytest.raises(JsonRpcException) as refused:
        await tiller.request(
            "tiller/rewind", {"turnId": first["turnId"], "files": True, "conversation": True}
        )
    assert refused.value.code == -32602 and "interrupt" in str(refused.value)


async def test_a_file_over_the_size_limit_is_skipped_and_listed(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    os.truncate(_touch(workspace / "big.bin"), 20 * 1024 * 1024)
    tiller: Tiller = await start()
    api.enqueue({"content": [text("ok")]})
    await tiller.run("hello")
    listed = (await tiller.request("tiller/checkpoints"))["checkpoints"]
    assert listed[0]["skipped"] == ["big.bin"]


async def test_rewind_and_checkpoints_slash_commands(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start(permissionMode="acceptEdits")
    api.enqueue(
        {"content": [tool_use("write_file", "w1", path="made.txt", content="x\n")]},
        {"content": [text("made it")]},
    )
    turn = (await tiller.run("make a file"))["turnId"]
    listing = (await tiller.prompt("/checkpoints"))["message"]
    assert turn in listing and "make a file" in listing
    answer = (await tiller.prompt("/rewind"))["message"]
    assert "Rewound to before" in answer and not (workspace / "made.txt").exists()


async def test_bad_rewind_params_answer_32602(tiller: Tiller) -> None:
    for params in (
        {},
        {"turnId": 5, "files": True},
        {"turnId": "turn_nope", "files": True},
        {"turnId": "turn_nope", "files": "yes"},
    ):
        with pytest.raises(JsonRpcException) as caught:
            await tiller.request("tiller/rewind", params)
        assert caught.value.code == -32602, params
    with pytest.raises(JsonRpcException) as caught:
        await tiller.request("tiller/undoRewind", {"undoId": "undo_nope"})
    assert caught.value.code == -32602


async def test_rewind_never_writes_through_planted_restore_symlink(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    """The repository plants entries at the names the restore once used for its temporary
    files: a symlink and a hard link to files outside. The rewind writes neither victim."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("the victim's own content\n")
    (outside / "linked").write_text("hard-linked from the workspace\n")
    (workspace / "a.txt").write_text("a before\n")
    (workspace / "b.txt").write_text("b before\n")
    os.symlink(outside / "victim", workspace / ".a.txt.tiller-restore")
    os.link(outside / "linked", workspace / ".b.txt.tiller-restore")
    before, victims = digest(workspace), digest(outside)
    tiller: Tiller = await start(permissionMode="acceptEdits")
    api.enqueue(
        {
            "content": [
                tool_use("read_file", "r1", path="a.txt"),
                tool_use("read_file", "r2", path="b.txt"),
            ]
        },
        {
            "content": [
                tool_use("write_file", "w1", path="a.txt", content="a after\n"),
                tool_use("write_file", "w2", path="b.txt", content="b after\n"),
            ]
        },
        {"content": [text("rewrote a and b")]},
    )
    turn = (await tiller.run("rewrite a and b"))["turnId"]
    assert (workspace / "a.txt").read_text() == "a after\n"

    await tiller.request("tiller/rewind", {"turnId": turn, "files": True, "conversation": False})
    assert digest(outside) == victims
    assert digest(workspace) == before
    assert not (workspace / "a.txt").is_symlink()


async def test_data_dir_inside_workspace_is_never_snapshotted(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    """The workspace is $HOME and the data dir the default one beneath it: the shadow
    repository and the session database are no part of any checkpoint, and every turn can be
    rewound and the rewind undone."""
    data = workspace / ".local" / "share" / "tiller"
    (workspace / "a.txt").write_text("a0\n")
    (workspace / "b.txt").write_text("b0\n")
    tiller: Tiller = await start(permissionMode="acceptEdits", dataDir=str(data))
    initial = digest(workspace)
    turns = []
    for name, content in (("a.txt", "a1\n"), ("b.txt", "b1\n"), ("a.txt", "a2\n")):
        api.enqueue(
            {"content": [tool_use("read_file", "r", path=name)]},
            {"content": [tool_use("write_file", "w", path=name, content=content)]},
            {"content": [text(f"wrote {name}")]},
        )
        turns.append((await tiller.run(f"write {name}"))["turnId"])
    listed = (await tiller.request("tiller/checkpoints"))["checkpoints"]
    assert [c["changedFiles"] for c in listed] == [1, 1, 1]

    preview = await tiller.request(
        "tiller/rewind", {"turnId": turns[0], "files": True, "conversation": False, "dryRun": True}
    )
    assert preview["changed"] == ["a.txt", "b.txt"]
    assert preview["added"] == preview["removed"] == []
    for turn in reversed(turns):
        done = await tiller.request(
            "tiller/rewind", {"turnId": turn, "files": True, "conversation": False}
        )
        touched = [p for kind in ("changed", "added", "removed") for p in done[kind]]
        assert not [p for p in touched if p.startswith(".local/")]
    assert not_data(digest(workspace)) == not_data(initial)
    await tiller.request("tiller/undoRewind", {"undoId": done["undoId"]})
    assert (workspace / "a.txt").read_text() == "a1\n"  # as before the last rewind
    assert (workspace / "b.txt").read_text() == "b0\n"


def not_data(found: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    return {k: v for k, v in found.items() if not k.startswith(".local")}


async def test_interrupted_restore_finishes_before_next_turn(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    """A server killed mid-rewind leaves a journal, part of the files restored and a temporary
    file behind. The next server finishes that restore before its first turn ends, even a
    turn that only talks, and says so."""
    for n in range(1500):
        (workspace / f"f{n:04}.txt").write_text(f"original {n}\n")
    original = digest(workspace)
    tiller: Tiller = await start(permissionMode="acceptEdits")
    tiller.on_confirm = allow
    api.enqueue(
        {"content": [tool_use("bash", "b1", command="for f in f*.txt; do echo x > $f; done")]},
        {"content": [text("changed them all")]},
    )
    turn = (await tiller.run("change every file", timeout=60))["turnId"]
    await tiller.request("tiller/checkpoints")  # the closing snapshot is done
    server = tiller.client._server
    assert server is not None
    server.kill()
    await server.wait()

    # What kill -9 leaves mid-restore: the journal names the target; a part is written.
    with sqlite3.connect(tmp_path / "data" / "sessions.sqlite3") as db:
        (target,) = db.execute(
            "SELECT before_commit FROM checkpoints WHERE turn_id=?", (turn,)
        ).fetchone()
    (shadow,) = (tmp_path / "data" / "checkpoints").glob("*.git")
    (shadow / "tiller-restore.journal").write_text(target)
    for n in range(0, 1500, 3):
        (workspace / f"f{n:04}.txt").write_text(f"original {n}\n")
    (workspace / ".f0001.txt.0123456789ab.tiller-restore").write_text("origi")

    again: Tiller = await start(permissionMode="acceptEdits")
    api.enqueue({"content": [text("just talking")]})
    ended = await again.run("hello", timeout=60)
    assert digest(workspace) == original
    assert not (shadow / "tiller-restore.journal").exists()
    notices = [e["text"] for e in again.events_of("notice", ended["turnId"])]
    assert any("interrupted" in n for n in notices), notices


# --- answers by effect, the chat's /rewind --dry-run and /undo, the board after a rewind ---------


async def notes_turn(tiller: Tiller, api: FakeMessagesAPI) -> str:
    """A turn that creates NOTES.md and fib.py (the users' report)."""
    api.enqueue(
        {
            "content": [
                tool_use("write_file", "w1", path="NOTES.md", content="# notes\n"),
                tool_use("write_file", "w2", path="fib.py", content="def fib(n): ...\n"),
            ]
        },
        {"content": [text("wrote them")]},
    )
    return str((await tiller.run("write notes and fib"))["turnId"])


EFFECTS = ("reverted", "deleted", "restored")


def effects(answer: dict[str, Any]) -> dict[str, list[str]]:
    return {k: sorted(answer[k]) for k in EFFECTS}


async def test_rewind_answers_and_events_say_what_happens_to_each_file(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    """Regression: rewinding to before a turn that created two files deleted them, yet every
    answer read "0 changed, 2 added, 0 removed" (and the undo "2 removed")."""
    (workspace / "app.py").write_text("v1\n")
    tiller: Tiller = await start(permissionMode="acceptEdits")
    turn = await notes_turn(tiller, api)
    (workspace / "app.py").write_text("v2\n")  # changed after the turn: reverted too
    created = ["NOTES.md", "fib.py"]
    said = {"reverted": ["app.py"], "deleted": created, "restored": []}

    preview = await tiller.request(
        "tiller/rewind", {"turnId": turn, "files": True, "conversation": True, "dryRun": True}
    )
    assert effects(preview) == said
    assert (workspace / "NOTES.md").exists()
    done = await tiller.request(
        "tiller/rewind", {"turnId": turn, "files": True, "conversation": True}
    )
    assert effects(done) == said and not (workspace / "fib.py").exists()
    assert sorted(done["added"]) == created  # the old view stays, for older clients
    rewound = await tiller.wait_event("rewound")
    assert effects(rewound) == said and sorted(rewound["added"]) == created

    undone = await tiller.request("tiller/undoRewind", {"undoId": done["undoId"]})
    back = {"reverted": ["app.py"], "deleted": [], "restored": created}
    assert effects(undone) == back and (workspace / "fib.py").exists()
    assert sorted(undone["removed"]) == created
    assert effects(await tiller.wait_event("rewindUndone")) == back
    entries = (await tiller.request("tiller/session/transcript"))["entries"]
    journaled = {e["kind"]: e for e in entries if e["kind"] in ("rewound", "rewindUndone")}
    assert effects(journaled["rewound"]) == said and effects(journaled["rewindUndone"]) == back


async def test_chat_can_dry_run_a_rewind_and_undo_it_with_slash_commands(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    """Regression: `tiller chat` could not undo a rewind (its answer named the RPC
    tiller/undoRewind) and had no dry run."""
    tiller: Tiller = await start(permissionMode="acceptEdits")
    turn = await notes_turn(tiller, api)
    assert "/undo" in (await tiller.prompt("/help"))["message"]

    preview = (await tiller.prompt("/rewind --dry-run"))["message"]
    assert "Dry run" in preview and "delete 2 file(s): NOTES.md, fib.py" in preview
    assert f"/rewind {turn}" in preview
    assert (workspace / "NOTES.md").exists() and not tiller.events_of("rewound")
    again = (await tiller.prompt(f"/rewind --dry-run {turn}"))["message"]
    assert again == preview

    answer = (await tiller.prompt("/rewind"))["message"]
    assert "deleted NOTES.md, fib.py" in answer and "write notes and fib" in answer
    assert "/undo" in answer and "tiller/" not in answer
    assert not (workspace / "NOTES.md").exists()

    undone = (await tiller.prompt("/undo"))["message"]
    assert "restored NOTES.md, fib.py" in undone and "tiller/" not in undone
    assert (workspace / "NOTES.md").read_text() == "# notes\n"
    assert "Nothing to undo" in (await tiller.prompt("/undo"))["message"]
    assert "undo_nope" in (await tiller.prompt("/undo undo_nope"))["message"]

    # An older rewind is undone by its id, the newest by /undo.
    first = (await tiller.prompt(f"/rewind {turn}"))["message"]
    undo_id = first.rsplit("/undo ", 1)[1].rstrip(").")
    await tiller.prompt(f"/rewind {turn}")
    assert "Undid" in (await tiller.prompt(f"/undo {undo_id}"))["message"]
    assert "Undid" in (await tiller.prompt("/undo"))["message"]
    assert "Nothing to undo" in (await tiller.prompt("/undo"))["message"]


def todo(content: str, status: str) -> dict[str, str]:
    return {"content": content, "status": status, "activeForm": f"Doing {content}"}


async def test_conversation_rewind_puts_the_todo_board_back(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    """Regression: after rewinding the conversation to before the turn that wrote the todos,
    the board (and the status lines) kept them."""
    board1 = [todo("a", "in_progress"), todo("b", "pending")]
    board2 = [todo("a", "completed"), todo("b", "in_progress")]
    api.enqueue(
        {"content": [tool_use("todo_write", "t1", todos=board1)]}, {"content": [text("one")]}
    )
    first = (await tiller.run("plan"))["turnId"]
    api.enqueue({"content": [text("just talking")]})
    await tiller.run("chat")  # a turn that leaves the board alone
    api.enqueue(
        {"content": [tool_use("todo_write", "t2", todos=board2)]}, {"content": [text("two")]}
    )
    second = (await tiller.run("work"))["turnId"]

    async def board() -> list[dict[str, str]]:
        return list((await tiller.request("tiller/getTodos"))["todos"])

    to_second = await tiller.request(
        "tiller/rewind", {"turnId": second, "files": False, "conversation": True}
    )
    assert await board() == board1 and tiller.todos[-1]["todos"] == board1
    state = await tiller.request("tiller/getState")
    assert state["activeTodo"] is None and state["todoCounts"] == {"completed": 0, "total": 2}
    to_first = await tiller.request(
        "tiller/rewind", {"turnId": first, "files": False, "conversation": True}
    )
    assert await board() == [] and tiller.todos[-1]["todos"] == []
    await tiller.request("tiller/undoRewind", {"undoId": to_first["undoId"]})
    assert await board() == board1
    await tiller.request("tiller/undoRewind", {"undoId": to_second["undoId"]})
    assert await board() == board2
    files_only = await tiller.request(
        "tiller/rewind", {"turnId": first, "files": True, "conversation": False}
    )
    assert files_only["undoId"] and await board() == board2  # the conversation is kept


async def test_an_interrupted_turn_leaves_no_todo_in_progress(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    """Regression: after an interrupted turn the status lines kept saying "in progress"."""
    api.enqueue(
        {"content": [tool_use("todo_write", "t1", todos=[todo("a", "in_progress")])]},
        {"content": [text("working on a, then stalling")], "hangAfterEvents": 4},
    )
    turn = (await tiller.prompt("work on a"))["turnId"]
    await tiller.wait_for(lambda: any(s["activeTodo"] == "Doing a" for s in tiller.states))
    await api.wait_hanging()
    await tiller.request("tiller/interrupt")
    assert (await tiller.turn_end(turn))["outcome"] == "interrupted"
    state = await tiller.request("tiller/getState")
    assert state["busy"] is False and state["activeTodo"] is None
    assert tiller.states[-1]["activeTodo"] is None
    # The board keeps the item; /todo does not present it as running.
    assert (await tiller.request("tiller/getTodos"))["todos"] == [todo("a", "in_progress")]
    assert "no turn is running" in (await tiller.prompt("/todo"))["message"]


async def test_mode_names_the_answer_lists_are_taken_and_worded_alike(
    tiller: Tiller,
) -> None:
    """Regression: `/mode accept edits` was refused by a message listing "accept edits", and
    the notice said "Mode is now accept edits" where the answer said "Mode: acceptEdits"."""
    refused = (await tiller.prompt("/mode turbo"))["message"]
    assert "accept edits" in refused
    for typed, mode in (
        ("accept edits", "acceptEdits"),
        ("Ask-Before-Edits", "default"),
        ("ACCEPTEDITS", "acceptEdits"),
        ("plan", "plan"),
    ):
        answer = (await tiller.prompt(f"/mode {typed}"))["message"]
        state = await tiller.request("tiller/getState")
        assert state["mode"] == mode, typed
        assert answer == {"acceptEdits": "Mode: accept edits", "default": "Mode: ask before edits",
                          "plan": "Mode: plan"}[mode]  # fmt: skip
    notices = [e["text"] for e in tiller.events_of("notice") if e["text"].startswith("Mode:")]
    assert notices and all(n.startswith("Mode: ") for n in notices), notices
    assert (await tiller.prompt("/mode"))["message"] == "Mode: plan"
