"""What `tiller run` prints for the items of issue 36, without a server: the skill row names
the skill (in the chat too: one renderer), `@` attachments are echoed, a notice from the
session's start is printed once, and a call nobody could be asked about is not worded as the
user's denial."""

from __future__ import annotations

import asyncio
import io
import re

from tiller.faces.chat.events import EventLog
from tiller.faces.chat.printer import Printer
from tiller.faces.client.options import DISALLOWED_FEEDBACK, UNATTENDED_FEEDBACK, ToolRules
from tiller.faces.client.plain import Run
from tiller.faces.client.terminal import Output
from tiller.faces.common.render import tool_summary
from tiller.jsontypes import JSON


def event(type_: str, turn_id: str | None = "turn_1", **fields: object) -> JSON:
    return {"sessionId": "ses_1", "turnId": turn_id, "seq": 1, "type": type_, **fields}


def plain_run() -> tuple[Run, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return Run(Output(out, err), yes=False, terminal=None), out, err


SKILL_CALL = event(
    "toolStarted", toolUseId="k1", name="skill", input={"name": "release"}, batch=0,
    concurrent=False,
)  # fmt: skip
SKILL_DONE = event("toolFinished", toolUseId="k1", name="skill", status="ok", durationMs=3)


class Lines(Printer):
    def __init__(self) -> None:
        super().__init__(lambda: False)
        self.lines: list[str] = []

    def line(self, text: str) -> None:
        self.lines.append(re.sub(r"\x1b\[[0-9;]*m", "", text))


def test_a_skill_row_names_the_skill_in_tiller_run_and_in_the_chat() -> None:
    run, out, _ = plain_run()
    run.on_event(SKILL_CALL)
    run.on_event(SKILL_DONE)
    assert out.getvalue().splitlines() == ["… skill release", "✓ skill release (3 ms)"]
    printer = Lines()
    log = EventLog(printer, lambda: None)
    log.on_event(SKILL_CALL)
    log.on_event(SKILL_DONE)
    assert any(line.startswith("✓ skill release") for line in printer.lines), printer.lines


def test_the_calls_without_a_path_or_command_say_what_they_act_on() -> None:
    assert tool_summary("task", {"description": "find the config", "prompt": "…"}) == (
        "find the config"
    )
    assert tool_summary("web_search", {"query": "pygls release"}) == "pygls release"
    assert tool_summary("web_fetch", {"url": "https://pypi.org/p/x"}) == "https://pypi.org/p/x"
    assert tool_summary("tool_search", {"query": "select:mcp__time__now"}) == (
        "select:mcp__time__now"
    )


def test_what_a_prompt_attached_is_echoed_before_the_answer() -> None:
    run, out, _ = plain_run()
    attached = [
        {"kind": "file", "name": "src/app.py", "bytes": 15},
        {"kind": "folder", "name": "docs"},
        {"kind": "image", "name": "shot.png", "mediaType": "image/png", "bytes": 70},
    ]
    run.on_event(event("turnStarted", prompt="look", attachments=attached))
    run.on_event(event("textDelta", text="Seen."))
    assert out.getvalue() == "+ @src/app.py · @docs · image shot.png\nSeen."
    quiet, nothing, _ = plain_run()
    quiet.on_event(event("turnStarted", prompt="look"))
    assert nothing.getvalue() == ""


def test_a_notice_from_the_sessions_start_is_printed_once_per_run() -> None:
    run, _, err = plain_run()
    blocked = "MCP configuration: server 'clock' of /ws/.mcp.json is not started: not enabled"
    run.on_event(event("notice", turn_id=None, text=blocked))
    run.on_event(event("notice", turn_id="turn_1", text=blocked))  # said again by a turn
    run.on_event(event("notice", turn_id=None, text=blocked))
    run.on_event(event("notice", turn_id="turn_1", text="AGENTS.md changed."))
    run.on_event(event("notice", turn_id="turn_2", text="AGENTS.md changed."))  # a turn's: kept
    assert err.getvalue().splitlines() == [
        f"· {blocked}",
        "· AGENTS.md changed.",
        "· AGENTS.md changed.",
    ]


def test_a_call_nobody_could_be_asked_about_is_not_the_users_denial() -> None:
    run, _, err = plain_run()
    params = {"turnId": "turn_1", "toolUseId": "b1", "name": "bash", "input": {"command": "make"}}
    answer = asyncio.run(run.confirm_tool(params))
    assert answer == {"decision": "deny", "asked": False, "feedback": UNATTENDED_FEEDBACK}
    assert err.getvalue() == (
        "· not run: bash make needs permission and there is no terminal to ask on "
        "(use --yes, or an allow rule)\n"
    )
    assert "did not refuse" in UNATTENDED_FEEDBACK and "--yes" in UNATTENDED_FEEDBACK


def test_disallowed_tools_deny_without_asking_anyone() -> None:
    run, _, _ = plain_run()
    run.tools = ToolRules(disallowed=frozenset({"bash"}))
    params = {"name": "bash", "input": {"command": "make"}}
    answer = asyncio.run(run.confirm_tool(params))
    assert answer == {"decision": "deny", "asked": False, "feedback": DISALLOWED_FEEDBACK}
