"""Diagnostics after edits: a client that offers them (``experimental.tiller.diagnostics``) is
asked before and after each edit; the errors the edit introduced are appended to its result,
so the model sees them and fixes its breakage in the next step. Others are never asked; an
error answer is "no diagnostics"."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lsprotocol import types

from fakeapi import FakeMessagesAPI
from harness import JSON, Tiller

OFFERED = types.ClientCapabilities(experimental={"tiller": {"diagnostics": True}})
TYPE_ERROR = re.compile(r'^(\w+): int = "')


def tool_use(name: str, tool_id: str, **tool_input: object) -> dict[str, object]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def checker(workspace: Path) -> Any:
    """A stand-in language server: an error for each ``name: int = "..."`` line, and a
    warning (never reported) for each TODO."""

    def lines_of(raw: str) -> list[str]:
        path = Path(raw)
        return path.read_text().splitlines() if path.exists() else []

    async def answer(params: JSON) -> Any:
        found = []
        for raw in params["paths"]:
            for number, line in enumerate(lines_of(raw), 1):
                if match := TYPE_ERROR.match(line):
                    found.append(
                        {
                            "path": raw,
                            "line": number,
                            "character": len(match.group(1)) + 8,
                            "severity": "error",
                            "message": 'Type "str" is not assignable to declared type "int"',
                            "source": "Pyright",
                        }
                    )
                if "TODO" in line:
                    found.append(
                        {"path": raw, "line": number, "character": 1,
                         "severity": "warning", "message": "a TODO"}
                    )  # fmt: skip
        return {"diagnostics": found}

    return answer


def tool_results(body: JSON) -> dict[str, str]:
    """The tool_result texts of a request's last message, by tool_use_id."""
    out = {}
    for block in body["messages"][-1]["content"]:
        if block.get("type") == "tool_result":
            content = block["content"]
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content)
            out[block["tool_use_id"]] = content
    return out


async def test_an_edit_that_introduces_a_type_error_is_corrected_in_the_next_step(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller = await start(capabilities=OFFERED, permissionMode="acceptEdits")
    tiller.on_diagnostics = checker(workspace)
    (workspace / "m.py").write_text('old: int = "x"\n')  # an error that was there before
    api.enqueue(
        {"content": [tool_use("read_file", "toolu_r", path="m.py")]},
        {
            "content": [
                tool_use(
                    "write_file",
                    "toolu_w",
                    path="m.py",
                    content='old: int = "x"\ncount: int = "three"  # TODO\n',
                )
            ]
        },
        {
            "content": [
                tool_use(
                    "edit_file",
                    "toolu_e",
                    path="m.py",
                    old_string='count: int = "three"',
                    new_string="count: int = 3",
                )
            ]
        },
        {"content": [{"type": "text", "text": "Fixed the type error."}]},
    )
    ended = await tiller.run("set count to three")
    assert ended["outcome"] == "completed"

    requests = api.message_requests()
    after_write = tool_results(requests[2].body)["toolu_w"]
    assert "The edit introduced these errors" in after_write
    assert 'm.py:2:13: Type "str" is not assignable to declared type "int" [Pyright]' in after_write
    assert "old" not in after_write.split("introduced these errors")[1]  # it was there before
    assert "TODO" not in after_write  # errors only
    after_fix = tool_results(requests[3].body)["toolu_e"]
    assert "introduced" not in after_fix

    asked = [params for method, params in tiller.asked if method == "tiller/diagnostics"]
    assert [(a["settle"], a["paths"]) for a in asked] == [
        (False, [str(workspace / "m.py")]),
        (True, [str(workspace / "m.py")]),
    ] * 2
    finished = {e["toolUseId"]: e for e in tiller.events_of("toolFinished", ended["turnId"])}
    assert "introduced these errors" in finished["toolu_w"]["output"]


async def test_a_client_that_did_not_offer_diagnostics_is_never_asked(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    await tiller.request("tiller/setMode", {"mode": "acceptEdits"})
    api.enqueue(
        {"content": [tool_use("write_file", "toolu_w", path="n.py", content='n: int = "a"\n')]},
        {"content": [{"type": "text", "text": "Done."}]},
    )
    ended = await tiller.run("write n.py")
    assert ended["outcome"] == "completed"
    assert all(method != "tiller/diagnostics" for method, _ in tiller.asked)
    assert "introduced" not in tool_results(api.message_requests()[1].body)["toolu_w"]


async def test_a_failed_diagnostics_answer_leaves_the_result_as_it_was(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller = await start(capabilities=OFFERED, permissionMode="acceptEdits")

    async def broken(params: JSON) -> Any:
        raise RuntimeError("the language server crashed")

    tiller.on_diagnostics = broken
    api.enqueue(
        {"content": [tool_use("write_file", "toolu_w", path="n.py", content='n: int = "a"\n')]},
        {"content": [{"type": "text", "text": "Done."}]},
    )
    ended = await tiller.run("write n.py")
    assert ended["outcome"] == "completed"
    assert (workspace / "n.py").exists()
    result = tool_results(api.message_requests()[1].body)["toolu_w"]
    assert "introduced" not in result and "n.py" in result
