"""File tools stay in the workspace end to end: hard links and a directory-swap race.

The real server over stdio, the real SDK against the fake Messages API; an ``outside``
directory next to the workspace holds what must never be read into the conversation or written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from fakeapi import FakeMessagesAPI
from harness import JSON, Tiller
from swap_race import Flipper

SECRET = "TOPSECRET-outside-the-workspace"


def tool_use(name: str, tool_id: str, **tool_input: object) -> dict[str, object]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def text(value: str) -> dict[str, object]:
    return {"type": "text", "text": value}


def make_outside(workspace: Path) -> Path:
    outside = workspace.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    return outside


async def allow(params: JSON) -> JSON:
    return {"decision": "allow"}


async def go_on(params: JSON) -> JSON:
    return {"continue": True}


def written_numbers(workspace: Path) -> set[str]:
    """N of every ``fN.txt`` anywhere under the workspace (parked directories included)."""
    return {p.stem.removeprefix("f") for p in workspace.rglob("f*.txt")}


async def test_hard_link_to_an_outside_file_is_neither_read_nor_changed(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    outside = make_outside(workspace)
    os.link(outside / "secret.txt", workspace / "notes.txt")
    tiller.on_confirm = allow
    api.enqueue(
        {
            "content": [
                tool_use("read_file", "toolu_r", path="notes.txt"),
                tool_use("grep", "toolu_g", pattern="TOPSECRET"),
            ]
        },
        {
            "content": [
                tool_use("edit_file", "toolu_e", path="notes.txt", old_string="T", new_string="x"),
            ]
        },
        {"content": [tool_use("write_file", "toolu_w", path="notes.txt", content="pwned\n")]},
        {"content": [text("I could not read it.")]},
    )
    ended = await tiller.run("what is in notes.txt?")
    assert ended["outcome"] == "completed"
    finished = {e["toolUseId"]: e for e in tiller.events_of("toolFinished", ended["turnId"])}
    for tool_id in ("toolu_r", "toolu_e", "toolu_w"):
        assert finished[tool_id]["status"] == "error"
        assert "hard links" in finished[tool_id]["output"]
    assert "skipped 1 file(s) with other hard links" in finished["toolu_g"]["output"]
    assert "confirm" in finished["toolu_r"]["output"]
    sent = json.dumps([r.body for r in api.message_requests()])
    assert SECRET not in sent  # never reached the model
    assert (outside / "secret.txt").read_text() == f"{SECRET}\n"


async def test_symlink_to_outside_is_refused_for_reads_and_writes(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    outside = make_outside(workspace)
    (workspace / "docs").symlink_to(outside)
    tiller.on_confirm = allow
    api.enqueue(
        {"content": [tool_use("read_file", "toolu_r", path="docs/secret.txt")]},
        {"content": [tool_use("write_file", "toolu_w", path="docs/new.txt", content="x\n")]},
        {"content": [text("Refused both.")]},
    )
    ended = await tiller.run("read docs/secret.txt then write docs/new.txt")
    finished = tiller.events_of("toolFinished", ended["turnId"])
    assert [e["status"] for e in finished] == ["error", "error"]
    assert all("outside the workspace" in e["output"] for e in finished)
    assert SECRET not in json.dumps([r.body for r in api.message_requests()])
    assert sorted(os.listdir(outside)) == ["secret.txt"]


async def test_writes_never_land_outside_while_a_directory_is_swapped_for_a_symlink(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    outside = make_outside(workspace)
    (workspace / "sub").mkdir()
    assert (await tiller.request("tiller/setMode", {"mode": "acceptEdits"}))[
        "mode"
    ] == "acceptEdits"
    writes = [
        tool_use("write_file", f"toolu_{n}", path=f"sub/f{n}.txt", content=f"{n}\n")
        for n in range(60)
    ]
    api.enqueue({"content": writes}, {"content": [text("Done.")]})
    tiller.on_checkpoint = go_on  # 60 calls pass the tool budget checkpoints
    flipper = Flipper(workspace, outside)
    flipper.thread.start()
    try:
        ended = await tiller.run("write the files", timeout=120)
    finally:
        flipper.halt()
    assert ended["outcome"] == "completed"
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    finished = tiller.events_of("toolFinished", ended["turnId"])
    ok = {e["toolUseId"].removeprefix("toolu_") for e in finished if e["status"] == "ok"}
    assert written_numbers(workspace) == ok
    assert flipper.as_link > 0
