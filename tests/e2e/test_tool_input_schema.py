"""Tool inputs are checked against each tool's input_schema before anything else happens."""

from __future__ import annotations

from pathlib import Path

from fakeapi import FakeMessagesAPI
from harness import Tiller


def tool_use(name: str, tool_id: str, **tool_input: object) -> dict[str, object]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def text(value: str) -> dict[str, object]:
    return {"type": "text", "text": value}


async def test_read_file_offset_zero_with_unknown_field_never_runs(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    """The bug seen: ``{"offset": 0, "bogus": 1}`` ran although the schema forbids both."""
    (workspace / "notes.txt").write_text("alpha\nbeta\n")
    api.enqueue(
        {"content": [tool_use("read_file", "toolu_bad", path="notes.txt", offset=0, bogus=1)]},
        {"content": [text("I will fix my input.")]},
    )
    ended = await tiller.run("read notes.txt")
    assert ended["outcome"] == "completed"
    (finished,) = tiller.events_of("toolFinished", ended["turnId"])
    assert finished["status"] == "error"
    output = finished["output"]
    assert "Invalid input for read_file" in output
    assert "$.offset: 0 is less than the minimum of 1" in output
    assert "'bogus' was unexpected" in output
    assert "alpha" not in output  # the call did not run
    result = api.message_requests()[1].body["messages"][-1]["content"][0]
    assert result["tool_use_id"] == "toolu_bad" and result["is_error"] is True
    assert "minimum of 1" in str(result["content"])


async def test_invalid_edit_is_refused_before_the_user_is_asked(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    api.enqueue(
        {"content": [tool_use("write_file", "toolu_w", path="a.txt")]},  # no content
        {"content": [text("Oops.")]},
    )
    ended = await tiller.run("write a.txt")
    (finished,) = tiller.events_of("toolFinished", ended["turnId"])
    assert (
        finished["status"] == "error" and "'content' is a required property" in finished["output"]
    )
    assert tiller.asked == []  # validation comes before the permission check
    assert not (workspace / "a.txt").exists()
