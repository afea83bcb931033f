"""`tiller chat` in a real terminal (issue 36): a question is answered only by a line typed after
it appeared that names a choice, sent with Enter; `> text` while idle is a prompt without the
`>`; every way out says how to resume the session; `/rewind` shows what it would do and asks.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

import test_chat_tmux
from fakeapi import FakeMessagesAPI
from test_chat_tmux import WAIT, Terminal, bottom, idle, last_user_text, text, tool_use

# The tmux fixtures of test_chat_tmux.py, used here too.
terminal = test_chat_tmux.terminal
start_chat = test_chat_tmux.start_chat

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

RESUME = re.compile(r"^To resume this session: tiller chat --resume (\S+)$", re.M)


def queued(screen: str) -> list[str]:
    return [line.strip() for line in screen.splitlines() if line.strip().startswith("⧗ queued")]


async def exited(term: Terminal) -> None:
    deadline = time.monotonic() + WAIT
    while not term.exited():
        assert time.monotonic() < deadline, term.screen()
        await asyncio.sleep(0.1)


# --- item 1: what answers a question ----------------------------------------------------------


async def test_keys_typed_before_a_question_appeared_stay_a_prompt_and_never_answer_it(
    api: FakeMessagesAPI, start_chat: Any, workspace: Path
) -> None:
    """`y` typed while the agent works, before its question is drawn, was taken as the answer."""
    api.enqueue(
        {"content": [tool_use("bash", "toolu_a1", command="touch made")], "holdUntil": "ask"},
        {"content": [text("Made it.")]},
        {"content": [text("You said y.")]},
    )
    term = await start_chat()
    term.type("make it")
    term.keys("Enter")
    await api.wait_held("ask", timeout=WAIT)
    term.type("y")  # before the question: the start of the next prompt
    await term.wait(lambda s: bottom(s, 2)[0].rstrip() == "› y")
    api.release("ask")
    screen = await term.wait("your line stays a prompt (Enter sends it;")
    assert "Allow bash touch made?" in screen
    term.keys("Enter")  # sends the line typed before: a queued prompt, not an answer
    screen = await term.wait(lambda s: queued(s) == ["⧗ queued 1: y"])
    assert "Allow bash touch made?" in screen and "type y, a, r or n and Enter" in screen
    assert not (workspace / "made").exists()

    term.type("y")  # typed under the question, on an empty line
    term.keys("Enter")
    screen = await term.wait(lambda s: "You said y." in s and idle(s))
    assert (workspace / "made").exists()
    assert "→ allowed" in screen
    assert last_user_text(api, 2) == "y"


async def test_a_sentence_typed_under_a_question_is_no_answer_and_a_choice_needs_enter(
    api: FakeMessagesAPI, start_chat: Any, workspace: Path
) -> None:
    """Typing `any news` under `[y] [a] [n]` answered `a` (allowed for the session) and left
    `ny news` in the prompt; `yellow` approved an edit."""
    notes = workspace / "notes.md"
    notes.write_text("keep me\n")
    edit = {"old_string": "keep me", "new_string": "changed"}
    api.enqueue(
        {"content": [tool_use("read_file", "toolu_n1", path="notes.md")]},
        {"content": [tool_use("edit_file", "toolu_n2", path="notes.md", **edit)]},
        {"content": [text("Edited.")]},
        {"content": [text("No news.")]},
    )
    term = await start_chat()
    term.type("edit notes")
    term.keys("Enter")
    await term.wait("type y, a or n and Enter")
    term.type("any news")
    await term.wait(lambda s: bottom(s, 2)[0].rstrip() == "› any news")  # all of it, no answer
    term.keys("Enter")
    await term.wait("“any news” is not an answer: type y, a or n and Enter")
    term.type("?")  # an edit asks again
    term.keys("Enter")
    await term.wait("“any news?” is not an answer")
    term.keys("Enter")  # Enter again: the line was a prompt after all
    await term.wait(lambda s: queued(s) == ["⧗ queued 1: any news?"])
    term.type("yellow")
    term.keys("Enter")
    await term.wait("“yellow” is not an answer")
    term.keys("C-c")  # clears the line
    await term.wait(lambda s: bottom(s, 2)[0].rstrip() == "›")
    assert notes.read_text() == "keep me\n"
    assert "Allow edit_file notes.md?" in term.screen()

    term.type("yes")
    term.keys("Enter")
    screen = await term.wait(lambda s: "No news." in s and idle(s))
    assert notes.read_text() == "changed\n"
    assert "→ allowed" in screen and "allowed for this session" not in screen
    assert last_user_text(api, 3) == "any news?"


async def test_a_denial_carries_the_feedback_typed_on_its_line(
    api: FakeMessagesAPI, start_chat: Any, workspace: Path
) -> None:
    api.enqueue(
        {"content": [tool_use("bash", "toolu_d1", command="touch made")]},
        {"content": [text("Not made.")]},
    )
    term = await start_chat()
    term.type("make it")
    term.keys("Enter")
    await term.wait("type y, a, r or n and Enter")
    term.type("n, not in this folder")
    term.keys("Enter")
    screen = await term.wait(lambda s: "Not made." in s and idle(s))
    assert "→ denied: not in this folder" in screen
    assert not (workspace / "made").exists()


# --- item 2: `>` while idle ---------------------------------------------------------------------


async def test_a_line_starting_with_gt_while_idle_is_a_prompt_without_the_gt(
    api: FakeMessagesAPI, start_chat: Any
) -> None:
    api.enqueue({"content": [text("Tabs it is.")]})
    term = await start_chat()
    term.type("> use tabs, not spaces")
    term.keys("Enter")
    screen = await term.wait(lambda s: "Tabs it is." in s and idle(s))
    assert "› use tabs, not spaces" in screen
    assert last_user_text(api, 0) == "use tabs, not spaces"


# --- item 3: how to resume ----------------------------------------------------------------------


@pytest.mark.parametrize("way_out", ["/exit", "/quit", "Ctrl-D", "Ctrl-C twice"])
async def test_every_way_out_says_how_to_resume_the_session(
    api: FakeMessagesAPI, start_chat: Any, terminal: Terminal, way_out: str
) -> None:
    api.enqueue({"content": [text("The answer is 42.")]}, {"content": [text("Still 42.")]})
    term = await start_chat()
    term.type("what is the answer")
    term.keys("Enter")
    await term.wait(lambda s: "The answer is 42." in s and idle(s))
    match way_out:
        case "Ctrl-D":
            term.keys("C-d")
        case "Ctrl-C twice":
            term.keys("C-c")
            await term.wait("Ctrl-C again to exit")
            term.keys("C-c")
        case command:
            term.type(command)
            term.keys("Enter")
    await exited(term)
    screen = term.everything()
    found = RESUME.search(screen)
    assert found is not None, screen
    assert screen.index("· bye") < found.start()
    if way_out != "/exit":
        return
    terminal.hang_up()
    term = await start_chat("--resume", found.group(1))  # what it says works
    await term.wait(lambda s: "The answer is 42." in s and idle(s))
    term.type("and now?")
    term.keys("Enter")
    await term.wait("Still 42.")
    assert "The answer is 42." in str(api.message_requests()[1].body["messages"])


async def test_a_session_with_no_turn_has_nothing_to_resume(start_chat: Any) -> None:
    term = await start_chat()
    term.type("/exit")
    term.keys("Enter")
    await exited(term)
    screen = term.everything()
    assert "· bye" in screen and "To resume" not in screen


# --- item 4: /rewind asks first -----------------------------------------------------------------


async def test_rewind_shows_what_it_would_do_and_changes_nothing_until_yes(
    api: FakeMessagesAPI, start_chat: Any, workspace: Path
) -> None:
    (workspace / "old.txt").write_text("old\n")
    api.enqueue(
        {"content": [tool_use("write_file", "toolu_r1", path="new.txt", content="new\n")]},
        {"content": [text("Wrote new.txt.")]},
    )
    term = await start_chat("--mode", "acceptEdits", toolbar="accept edits · claude-test-1")
    term.type("make a file")
    term.keys("Enter")
    await term.wait(lambda s: "Wrote new.txt." in s and idle(s, "accept edits"))
    term.type("/rewind")
    term.keys("Enter")
    screen = await term.wait("(/undo undoes it)")
    found = re.search(r"Rewinding to before (turn_\w+) \(“make a file”\) would:", screen)
    assert found is not None, screen
    preview = screen[found.start() :]
    assert "  delete 1 file: new.txt" in preview
    assert "  drop 1 turn from the conversation: “make a file”" in preview
    assert f"Rewind to before {found.group(1)}?" in preview
    assert (workspace / "new.txt").exists()

    term.type("n")
    term.keys("Enter")
    await term.wait("· nothing was rewound")
    assert (workspace / "new.txt").read_text() == "new\n"
    await asked_again(term, 2)
    term.keys("Escape")  # no, too
    await term.wait(lambda s: s.count("· nothing was rewound") == 2, whole=True)
    assert (workspace / "new.txt").exists()

    await asked_again(term, 3)
    term.type("y")
    term.keys("Enter")
    await term.wait(f"Rewound to before {found.group(1)}")
    assert not (workspace / "new.txt").exists()
    assert (workspace / "old.txt").read_text() == "old\n"


async def asked_again(term: Terminal, times: int) -> None:
    """``/rewind`` once more, until its question shows (its preview printed ``times``)."""
    term.type("/rewind")
    term.keys("Enter")
    await term.wait(
        lambda s: s.count("Rewinding to before") == times and "(/undo undoes it)" in s, whole=True
    )


async def test_a_rewind_with_nothing_to_rewind_is_the_servers_answer(start_chat: Any) -> None:
    term = await start_chat()
    term.type("/rewind")
    term.keys("Enter")
    screen = await term.wait("Nothing to rewind yet")
    assert "(/undo undoes it)" not in screen
