"""`tiller chat` in a real terminal: steering with `>` while the agent works, the bell (or an
OSC 9 notification) when it needs an answer or finishes, and the rule on each tool row."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import test_chat_tmux
from fakeapi import FakeMessagesAPI
from test_chat_tmux import Terminal, idle, text, tool_use

# The tmux fixtures of test_chat_tmux.py, used here too.
terminal = test_chat_tmux.terminal
start_chat = test_chat_tmux.start_chat

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def record_output(term: Terminal, into: Path) -> None:
    """Everything the chat writes to its terminal from now on, raw, in ``into``."""
    term.tmux("pipe-pane", "-o", "-t", "chat", f"cat >> {into}")


async def test_a_line_starting_with_gt_steers_the_running_turn(
    api: FakeMessagesAPI, start_chat: Any, workspace: Path
) -> None:
    gate = "until [ -e go ]; do sleep 0.05; done"
    api.enqueue(
        {"content": [tool_use("bash", "toolu_s1", command=gate)]},
        {"content": [text("Using tabs from now on.")]},
    )
    term = await start_chat()
    term.type("reformat")
    term.keys("Enter")
    await term.wait("Allow bash until")
    # The answer and the steer in one write, as a quick typist's keys arrive: the keys right
    # behind an answer are the prompt's.
    term.keys("y", "Enter", "> use tabs, not spaces", "Enter")
    # The server took it for the running turn (the command is still waiting for ``go``): only
    # then may the step end. (Touched at once, under load the step could end first, and the
    # line became a prompt of its own.)
    await term.wait("· steering at the next step: use tabs, not spaces")
    (workspace / "go").touch()
    screen = await term.wait(lambda s: "Using tabs from now on." in s and idle(s))
    assert "↪ steered: use tabs, not spaces" in screen
    assert screen.index("✓ bash until") < screen.index("↪ steered")
    sent = api.message_requests()[1].body["messages"][-1]
    assert "use tabs, not spaces" in json.dumps(sent)
    assert "queued" not in screen


async def test_keys_typed_right_behind_an_answer_reach_the_prompt(
    api: FakeMessagesAPI, start_chat: Any
) -> None:
    """The keys read in the same write as a question's answer went to the answered question,
    as missed choices, until it went away: a quick typist's next prompt was lost."""
    api.enqueue(
        {"content": [tool_use("bash", "toolu_t1", command="touch made")]},
        {"content": [text("Made it.")]},
        {"content": [text("The next one is done.")]},
    )
    term = await start_chat()
    term.type("make it")
    term.keys("Enter")
    await term.wait("Allow bash touch")
    term.keys("y", "Enter", "and the next one", "Enter")  # the answer, the next prompt: one write
    screen = await term.wait(lambda s: "The next one is done." in s and idle(s))
    assert "Made it." in screen
    assert "and the next one" in json.dumps(api.message_requests()[-1].body["messages"][-1])


async def test_the_bell_rings_for_a_question_and_a_finished_turn(
    api: FakeMessagesAPI, start_chat: Any, tmp_path: Path
) -> None:
    api.enqueue(
        {"content": [tool_use("bash", "toolu_b1", command="touch made")]},
        {"content": [text("All done.")]},
    )
    term = await start_chat()
    raw = tmp_path / "raw-bell"
    record_output(term, raw)
    term.type("make it")
    term.keys("Enter")
    await term.wait("Allow bash touch")
    assert await _eventually(lambda: raw.read_bytes().count(b"\x07") >= 1)
    term.type("y")
    term.keys("Enter")
    screen = await term.wait(lambda s: "All done." in s and idle(s))
    assert await _eventually(lambda: raw.read_bytes().count(b"\x07") >= 2)
    assert "· ask: mode default" in screen  # the tool row says what decided


async def test_osc9_sends_a_desktop_notification_with_the_message(
    api: FakeMessagesAPI, start_chat: Any, tmp_path: Path
) -> None:
    api.enqueue({"content": [text("Finished.")]})
    term = await start_chat("--notify", "osc9")
    raw = tmp_path / "raw-osc9"
    record_output(term, raw)
    term.type("hello")
    term.keys("Enter")
    await term.wait(lambda s: "Finished." in s and idle(s))
    assert await _eventually(lambda: b"\x1b]9;Tiller: turn completed\x07" in raw.read_bytes())


async def _eventually(check: Any, tries: int = 100) -> bool:
    """``check()`` once it holds (pipe-pane writes the file a moment after the screen)."""
    for _ in range(tries):
        try:
            if check():
                return True
        except FileNotFoundError:
            pass
        await asyncio.sleep(0.05)
    return bool(check())
