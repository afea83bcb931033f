"""toolFinished for write_file / edit_file carries diff: {added, removed} line counts."""

from __future__ import annotations

from pathlib import Path

from fakeapi import FakeMessagesAPI
from harness import Tiller


def tool_use(name: str, tool_id: str, **tool_input: object) -> dict[str, object]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def text(value: str) -> dict[str, object]:
    return {"type": "text", "text": value}


async def test_write_and_edit_report_lines_added_and_removed(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    assert (await tiller.request("tiller/setMode", {"mode": "acceptEdits"}))[
        "mode"
    ] == "acceptEdits"
    api.enqueue(
        {
            "content": [
                tool_use("write_file", "toolu_w", path="m.py", content="a = 1\nb = 2\nc = 3\n")
            ]
        },
        {"content": [tool_use("read_file", "toolu_r", path="m.py")]},
        {
            "content": [
                tool_use("edit_file", "toolu_e", path="m.py", old_string="b = 2\n", new_string="")
            ]
        },
        {"content": [text("Done.")]},
    )
    ended = await tiller.run("make m.py")
    assert ended["outcome"] == "completed"
    finished = {e["toolUseId"]: e for e in tiller.events_of("toolFinished", ended["turnId"])}
    assert finished["toolu_w"]["diff"] == {"added": 3, "removed": 0}
    assert finished["toolu_e"]["diff"] == {"added": 0, "removed": 1}
    assert "diff" not in finished["toolu_r"]
    assert (workspace / "m.py").read_text() == "a = 1\nc = 3\n"
