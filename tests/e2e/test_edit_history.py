"""Edit history: every finished write_file / edit_file keeps its file before and after, so
the diff of an old edit opens complete (``tiller/edit``), after a restart too; toolFinished
says the first line it changed, for a link to the file at that line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from fakeapi import FakeMessagesAPI
from harness import stop_tiller


def tool_use(name: str, tool_id: str, **tool_input: object) -> dict[str, object]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


async def test_an_old_edit_opens_with_its_real_before_even_after_a_restart(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "m.py").write_text("a = 1\nb = 2\nc = 3\n")
    tiller = await start(permissionMode="acceptEdits")
    api.enqueue(
        {"content": [tool_use("read_file", "toolu_r", path="m.py")]},
        {
            "content": [
                tool_use("write_file", "toolu_w", path="m.py", content="a = 1\nb = 20\nc = 3\n")
            ]
        },
        {
            "content": [
                tool_use(
                    "edit_file", "toolu_e", path="m.py", old_string="c = 3", new_string="c = 30"
                )
            ]
        },
        {"content": [tool_use("write_file", "toolu_n", path="new.txt", content="hello\n")]},
        {"content": [{"type": "text", "text": "Done."}]},
    )
    ended = await tiller.run("change m.py")
    assert ended["outcome"] == "completed"
    finished = {e["toolUseId"]: e for e in tiller.events_of("toolFinished", ended["turnId"])}
    assert finished["toolu_w"]["line"] == 2
    assert finished["toolu_e"]["line"] == 3
    assert finished["toolu_n"]["line"] == 1
    assert "line" not in finished["toolu_r"]

    await stop_tiller(tiller)  # a restart: another server on the same store
    again = await start()
    overwrite = await again.request("tiller/edit", {"toolUseId": "toolu_w"})
    assert overwrite == {
        "path": "m.py",
        "before": "a = 1\nb = 2\nc = 3\n",
        "after": "a = 1\nb = 20\nc = 3\n",
        "line": 2,
        "complete": True,
    }
    edited = await again.request("tiller/edit", {"toolUseId": "toolu_e"})
    assert (edited["before"], edited["after"]) == (
        "a = 1\nb = 20\nc = 3\n",
        "a = 1\nb = 20\nc = 30\n",
    )
    created = await again.request("tiller/edit", {"toolUseId": "toolu_n"})
    assert created["before"] is None and created["after"] == "hello\n"
    with pytest.raises(JsonRpcInvalidParams, match="no finished edit 'toolu_r' is kept"):
        await again.request("tiller/edit", {"toolUseId": "toolu_r"})


async def test_a_huge_edit_keeps_256_kb_of_each_side_and_says_so(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller = await start(permissionMode="acceptEdits")
    big = "x" * 99 + "\n"
    api.enqueue(
        {"content": [tool_use("write_file", "toolu_big", path="big.txt", content=big * 3000)]},
        {"content": [{"type": "text", "text": "Done."}]},
    )
    ended = await tiller.run("write a big file")
    assert ended["outcome"] == "completed"
    kept = await tiller.request("tiller/edit", {"toolUseId": "toolu_big"})
    assert kept["complete"] is False
    assert len(kept["after"]) == 256 * 1024
