"""tiller/prompt's attachments: @-mentions reach the model as text blocks of the user message,
images as image blocks, all before the prompt's words; the event log keeps their summary (a
small image whole, as its thumbnail) so a redraw shows them; bad ones are refused at the edge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from fakeapi import FakeMessagesAPI
from harness import Tiller

PNG_1PX = (  # a 1×1 png
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAA"
    "AABJRU5ErkJggg=="
)


def last_user_blocks(api: FakeMessagesAPI) -> list[dict[str, Any]]:
    body = api.message_requests()[-1].body
    content: list[dict[str, Any]] = body["messages"][-1]["content"]
    return content


async def test_mentions_and_an_image_reach_the_model_as_blocks_before_the_prompt(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("def main():\n    return 42\n")
    api.enqueue({"content": [{"type": "text", "text": "Seen."}]})
    started = await tiller.request(
        "tiller/prompt",
        {
            "text": "What do these show?",
            "attachments": [
                {"kind": "file", "name": "src/app.py", "path": "src/app.py"},
                {"kind": "folder", "name": "src", "path": "src"},
                {
                    "kind": "selection",
                    "name": "app.py:2",
                    "path": "src/app.py",
                    "startLine": 2,
                    "endLine": 2,
                    "text": "    return 42",
                },
                {"kind": "problems", "name": "problems", "text": "app.py:2:5 error: bad"},
                {"kind": "image", "name": "shot.png", "mediaType": "image/png", "data": PNG_1PX},
            ],
        },
    )
    assert started["status"] == "started"
    ended = await tiller.turn_end(started["turnId"])
    assert ended["outcome"] == "completed"

    blocks = last_user_blocks(api)
    assert [b["type"] for b in blocks] == ["text", "text", "text", "text", "image", "text"]
    file_text, folder_text, selection_text, problems_text = (b["text"] for b in blocks[:4])
    assert file_text.startswith('<context kind="file" name="src/app.py">')
    assert "return 42" in file_text
    assert "app.py" in folder_text and folder_text.startswith('<context kind="folder"')
    assert "path: src/app.py, lines 2-2\n    return 42" in selection_text
    assert "error: bad" in problems_text
    assert blocks[4]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG_1PX}
    assert blocks[5]["text"] == "What do these show?"

    turn_started = tiller.events_of("turnStarted", started["turnId"])[0]
    kinds = [(a["kind"], a["name"]) for a in turn_started["attachments"]]
    assert kinds == [
        ("file", "src/app.py"),
        ("folder", "src"),
        ("selection", "app.py:2"),
        ("problems", "problems"),
        ("image", "shot.png"),
    ]
    shot = turn_started["attachments"][4]
    assert shot["thumbnail"] == f"data:image/png;base64,{PNG_1PX}"
    assert shot["bytes"] == 70

    entries = (await tiller.request("tiller/session/transcript", {}))["entries"]
    journaled = next(e for e in entries if e["kind"] == "turnStarted")
    assert journaled["attachments"] == turn_started["attachments"]


async def test_a_mentioned_file_counts_as_read_so_the_model_may_edit_it(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("old\n")
    await tiller.request("tiller/setMode", {"mode": "acceptEdits"})
    edit = {"path": "a.txt", "old_string": "old", "new_string": "new"}
    api.enqueue(
        {"content": [{"type": "tool_use", "id": "toolu_e", "name": "edit_file", "input": edit}]},
        {"content": [{"type": "text", "text": "Edited."}]},
    )
    started = await tiller.request(
        "tiller/prompt",
        {"text": "fix it", "attachments": [{"kind": "file", "name": "a.txt", "path": "a.txt"}]},
    )
    ended = await tiller.turn_end(started["turnId"])
    assert ended["outcome"] == "completed"
    assert (workspace / "a.txt").read_text() == "new\n"


@pytest.mark.parametrize(
    ("attachment", "message"),
    [
        (
            {"kind": "image", "name": "x.jpg", "mediaType": "image/jpeg", "data": PNG_1PX},
            "params.attachments[0].mediaType: the image was sent as image/jpeg but its data is "
            "image/png",
        ),
        (
            {"kind": "image", "name": "x.bmp", "mediaType": "image/bmp", "data": PNG_1PX},
            "params.attachments[0].mediaType: 'image/bmp' is not an image type the model takes",
        ),
        (
            {"kind": "image", "name": "x.png", "mediaType": "image/png", "data": "not base64!"},
            "params.attachments[0].data: not valid base64",
        ),
        (
            {"kind": "file", "name": "passwd", "path": "/etc/passwd"},
            "params.attachments[0]: cannot mention '/etc/passwd'",
        ),
        ({"kind": "selection", "name": "sel"}, "params.attachments[0].text: a selection mention"),
        (
            {
                "kind": "image",
                "name": "x.png",
                "mediaType": "image/png",
                "data": PNG_1PX,
                "thumbnail": "https://example.com/x.png",
            },
            "params.attachments[0].thumbnail: must be a data:image/... base64 URL",
        ),
        ({"kind": "gossip", "name": "g", "text": "x"}, "params.attachments[0].kind: unknown kind"),
    ],
)
async def test_a_bad_attachment_is_refused_naming_it_and_nothing_starts(
    tiller: Tiller, api: FakeMessagesAPI, attachment: dict[str, Any], message: str
) -> None:
    with pytest.raises(JsonRpcInvalidParams) as caught:
        await tiller.request("tiller/prompt", {"text": "look", "attachments": [attachment]})
    assert message in str(caught.value)
    state = await tiller.request("tiller/getState", {})
    assert state["busy"] is False and state["turnId"] is None
    assert api.message_requests() == []


async def test_a_thumbnail_the_client_made_is_what_the_log_keeps(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    thumbnail = "data:image/jpeg;base64,/9j/4AAQ"
    big = PNG_1PX  # the image itself goes to the model whole
    api.enqueue({"content": [{"type": "text", "text": "Seen."}]})
    image = {"kind": "image", "name": "s.png", "mediaType": "image/png", "data": big}
    started = await tiller.request(
        "tiller/prompt", {"text": "see", "attachments": [{**image, "thumbnail": thumbnail}]}
    )
    await tiller.turn_end(started["turnId"])
    shown = tiller.events_of("turnStarted", started["turnId"])[0]["attachments"][0]
    assert shown["thumbnail"] == thumbnail
    assert last_user_blocks(api)[0]["source"]["data"] == big
