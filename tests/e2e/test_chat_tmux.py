"""`tiller chat` in a real terminal: tmux runs it against the fake Messages API.

``tmux send-keys`` types, ``tmux capture-pane`` reads the screen. Every wait polls the screen
with a bound; nothing asserts a duration. Fixtures ``api`` (the fake, key "test-key") and
``workspace`` come from conftest.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from fakeapi import FakeMessagesAPI
from processes import alive, children, processes_with, until
from tiller.extend.trust import record
from warm import suite

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

WIDTH, HEIGHT = 110, 32
WAIT = 20.0
TOOLBAR = "ask before edits · claude-test-1"  # the mode's words, as notices say it


def tool_use(name: str, tool_id: str, **tool_input: object) -> dict[str, object]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def text(value: str) -> dict[str, object]:
    return {"type": "text", "text": value}


def chat_env(data_dir: Path, key: str | None = "test-key") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "TILLER_"))}
    env.update(TILLER_DATA_DIR=str(data_dir), TERM="xterm-256color")
    # never the user's own settings (permission rules)
    env.update(CLAUDE_CONFIG_DIR=str(data_dir / "user-claude"))
    env.update(TILLER_CONFIG_DIR=str(data_dir / "user-tiller"))
    if key is not None:
        env["ANTHROPIC_API_KEY"] = key
    return env


class Terminal:
    """One tmux server (own socket) with one pane running `tiller chat`."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        )
        if done.returncode != 0:
            raise AssertionError(f"tmux {args}: {done.stderr}")
        return done.stdout

    def start(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        command = ["env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv]
        self.tmux(
            "new-session", "-d", "-s", "chat", "-x", str(WIDTH), "-y", str(HEIGHT),
            "-c", str(cwd), "--", *command,
        )  # fmt: skip
        self.tmux("set-option", "-t", "chat", "remain-on-exit", "on")

    def keys(self, *keys: str) -> None:
        """Named keys (``Enter``, ``Escape``, ``BTab``, ``C-c``) or characters."""
        self.tmux("send-keys", "-t", "chat", *keys)

    def type(self, literal: str) -> None:
        self.tmux("send-keys", "-t", "chat", "-l", literal)

    def screen(self) -> str:
        """What is visible now, wrapped lines joined."""
        return self.tmux("capture-pane", "-p", "-J", "-t", "chat")

    def everything(self) -> str:
        """The scrollback and the screen."""
        return self.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "chat")

    def pid(self) -> int:
        return int(self.tmux("display-message", "-p", "-t", "chat", "#{pane_pid}").strip())

    def exited(self) -> bool:
        return self.tmux("display-message", "-p", "-t", "chat", "#{pane_dead}").strip() == "1"

    async def wait(
        self, check: str | Callable[[str], bool], whole: bool = False, timeout: float = WAIT
    ) -> str:
        """The screen once ``check`` (a text on it, or a test of it) holds."""
        test = (lambda s: check in s) if isinstance(check, str) else check
        deadline = time.monotonic() + timeout
        while True:
            screen = self.everything() if whole else self.screen()
            if test(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"waited {timeout}s for {check!r}; screen:\n{screen}")
            await asyncio.sleep(0.1)

    def close(self) -> None:
        """Kill the tmux server (and so the chat, whose server then sees end of input) and
        remove its socket file."""
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)
        tmpdir = Path(os.environ.get("TMUX_TMPDIR", "/tmp"))
        (tmpdir / f"tmux-{os.getuid()}" / self.socket).unlink(missing_ok=True)

    def hang_up(self) -> None:
        """The terminal goes away (its chat gets SIGHUP). A later ``start`` gets a tmux server
        of its own: a client that reaches the old one while it exits fails ("server exited
        unexpectedly"), which is how killing the last session and starting again failed."""
        self.close()
        self.socket = f"tiller-test-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal(f"tiller-test-{uuid.uuid4().hex[:10]}")
    yield term
    term.close()


@pytest_asyncio.fixture
async def start_chat(
    terminal: Terminal, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> AsyncIterator[Callable[..., Any]]:
    """Start `tiller chat ARGS...` against the fake; wait for its toolbar."""

    async def start(
        *args: str,
        toolbar: str = TOOLBAR,
        key: str | None = "test-key",
        env: dict[str, str] | None = None,
        trusted: bool | None = True,
    ) -> Terminal:
        """``trusted``: the user's recorded decision for the workspace (None: none yet, so
        the chat asks first)."""
        argv = [
            sys.executable, "-m", "tiller.faces.cli", "chat", "--workspace", str(workspace),
            "--base-url", api.base_url, "--model", "claude-test-1", *args,
        ]  # fmt: skip
        environment = {**chat_env(tmp_path / "data", key), **(env or {})}
        if trusted is not None:
            record(workspace, trusted, environment)
        terminal.start(argv, environment, workspace)
        await terminal.wait(toolbar)
        return terminal

    yield start


def bottom(screen: str, lines: int = 3) -> list[str]:
    """The last ``lines`` lines that are not blank (padded with blanks on an empty screen)."""
    filled = [line for line in screen.splitlines() if line.strip()]
    return ([""] * lines + filled)[-lines:]


def idle(screen: str, toolbar: str = TOOLBAR) -> bool:
    """The prompt and the toolbar at the bottom, and the agent not working."""
    return prompt_and_toolbar_at_the_bottom(screen, toolbar) and "working" not in bottom(screen)[-1]


def prompt_and_toolbar_at_the_bottom(screen: str, toolbar: str = TOOLBAR) -> bool:
    prompt, bar = bottom(screen, 2)
    return prompt.startswith("›") and toolbar in bar


def last_user_content(api: FakeMessagesAPI, n: int) -> Any:
    """The content of the last message of the ``n``-th request to the fake."""
    return api.message_requests()[n].body["messages"][-1]["content"]


def last_user_text(api: FakeMessagesAPI, n: int) -> str:
    content = last_user_content(api, n)
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if block.get("type") == "text")


# --- streaming and the toolbar ----------------------------------------------------------------


async def test_the_first_start_in_a_folder_asks_whether_to_trust_it_once(
    start_chat: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    (workspace / ".claude").mkdir()
    hook = {"type": "command", "command": f"touch {tmp_path / 'hook-ran'}"}
    (workspace / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [hook]}]}})
    )
    term = await start_chat(toolbar="[t] trust it", trusted=None)
    assert ".claude/settings.json (hooks)" in term.screen()
    term.type("x")  # not a choice: nothing happens, a reminder says which are
    term.keys("Enter")
    await term.wait("“x” is not an answer: type t or n and Enter")
    term.keys("C-c")
    term.type("n")
    term.keys("Enter")
    await term.wait(TOOLBAR)
    await term.wait("Not trusting")
    api.enqueue({"content": [text("hi")]})
    term.type("hello")
    term.keys("Enter")
    await term.wait("hi")
    assert not (tmp_path / "hook-ran").exists()  # the turn ended: the hook never ran
    recorded = json.loads((tmp_path / "data" / "user-tiller" / "trusted-folders.json").read_text())
    assert recorded["folders"][str(workspace)]["trusted"] is False


async def test_an_answer_streams_above_while_the_prompt_stays(
    api: FakeMessagesAPI, start_chat: Any
) -> None:
    story = "".join(f"line {n} of the answer\n" for n in range(1, 13)) + "the end."
    api.enqueue({"content": [text(story)], "chunkDelay": 0.05, "textChunk": 6})
    term = await start_chat()
    term.type("tell me a story")
    term.keys("Enter")

    # (A check of the layout is part of each wait: a capture can fall mid-redraw.)
    middle = await term.wait(
        lambda s: "line 3 of the answer" in s and "working" in bottom(s, 1)[0]
        and prompt_and_toolbar_at_the_bottom(s)
    )  # fmt: skip
    assert "the end." not in middle
    assert "› tell me a story" in middle

    done = await term.wait(
        lambda s: "the end." in s and prompt_and_toolbar_at_the_bottom(s)
        and "working" not in bottom(s, 1)[0]
    )  # fmt: skip
    assert "line 12 of the answer" in done
    assert last_user_text(api, 0) == "tell me a story"


async def test_shift_tab_cycles_the_mode_in_the_toolbar(start_chat: Any) -> None:
    term = await start_chat()
    term.keys("BTab")
    await term.wait(lambda s: "accept edits · claude-test-1" in bottom(s, 1)[0])
    term.keys("BTab")
    await term.wait(lambda s: "plan · claude-test-1" in bottom(s, 1)[0])
    term.keys("BTab")

    def notices(screen: str) -> list[str]:
        return [line for line in screen.splitlines() if line.startswith("· ")]

    # The state (toolbar) and the notice are two messages: wait for both, in either order.
    screen = await term.wait(
        lambda s: (
            TOOLBAR in bottom(s, 1)[0]
            and any(line.endswith(" ask before edits") for line in notices(s))
        )
    )
    # The notices and the toolbar use the same words; the ids stay on the wire only.
    assert any(line.endswith(" accept edits") for line in notices(screen)), screen
    assert "acceptEdits" not in screen and "default ·" not in screen


async def test_escape_interrupts_a_running_command_and_the_prompt_stays(
    api: FakeMessagesAPI, start_chat: Any
) -> None:
    marker = f"tiller-chat-sleep-{uuid.uuid4().hex[:8]}"
    sleep = tool_use("bash", "toolu_s1", command=f"exec -a {marker} sleep 30")
    api.enqueue({"content": [text("Waiting.\n"), sleep]})
    term = await start_chat()
    term.type("wait a while")
    term.keys("Enter")
    await term.wait("Allow bash exec -a")
    term.type("y")
    term.keys("Enter")
    await term.wait("… bash exec -a")
    await until(lambda: processes_with(marker), within=WAIT, report=term.screen)

    term.keys("Escape")
    # Well before the 30 s the command would take: the bound is only for a hung test.
    await term.wait(lambda s: "✗ bash exec -a" in s and "interrupted" in s and idle(s), timeout=10)
    assert processes_with(marker) == []


async def test_escape_on_a_pending_question_logs_no_unknown_message_id_warning(
    api: FakeMessagesAPI, start_chat: Any
) -> None:
    api.enqueue(
        {"content": [tool_use("bash", "toolu_w1", command="touch never.txt")]},
        {"content": [text("Second turn answered.")]},
    )
    term = await start_chat()
    term.type("make a file")
    term.keys("Enter")
    await term.wait("Allow bash touch never.txt")
    term.keys("Escape")
    await term.wait(lambda s: "interrupted" in s and idle(s))
    # The chat answered the withdrawn question after the server had cancelled it; a later
    # prompt is read after that answer, so any warning about it is on screen by its reply.
    term.type("again")
    term.keys("Enter")
    screen = await term.wait(lambda s: "Second turn answered." in s and idle(s), whole=True)
    assert "unknown message id" not in screen
    assert "WARNING" not in screen


async def test_without_a_key_the_chat_names_the_variable_and_the_demo_at_once(
    api: FakeMessagesAPI, start_chat: Any
) -> None:
    term = await start_chat(key=None)
    term.type("hello")
    term.keys("Enter")
    screen = await term.wait(lambda s: "No API key" in s and idle(s), whole=True)
    assert "ANTHROPIC_API_KEY" in screen and "--demo" in screen
    assert "retrying" not in screen and "busy or unreachable" not in screen
    assert api.requests == []


async def test_a_prompt_typed_while_the_agent_works_runs_after_the_turn(
    api: FakeMessagesAPI, start_chat: Any, workspace: Path
) -> None:
    # The command waits for a file the test creates once the second prompt shows as queued.
    gate = "until [ -e go ]; do sleep 0.05; done"
    api.enqueue(
        {"content": [tool_use("bash", "toolu_q1", command=gate)]},
        {"content": [text("First turn done.")]},
        {"content": [text("Second prompt answered.")]},
    )
    term = await start_chat()
    term.type("first")
    term.keys("Enter")
    await term.wait("Allow bash until")
    term.type("y")
    term.keys("Enter")
    await term.wait("… bash until")
    term.type("second")
    term.keys("Enter")
    queued = await term.wait(lambda s: "queued 1" in bottom(s, 1)[0])
    assert "⧗ queued 1: second" in queued

    (workspace / "go").touch()
    screen = await term.wait(lambda s: "Second prompt answered." in s and idle(s))
    assert screen.index("First turn done.") < screen.index("› second")
    assert screen.index("› second") < screen.index("Second prompt answered.")
    assert "queued" not in screen
    assert last_user_text(api, 2) == "second"


async def test_the_todo_board_prints_when_it_changes_and_shows_in_the_toolbar(
    api: FakeMessagesAPI, start_chat: Any
) -> None:
    todos = [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
        {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
    ]
    api.enqueue(
        {"content": [tool_use("todo_write", "toolu_t1", todos=todos)]},
        {"content": [text("Board set.")]},
    )
    term = await start_chat()
    term.type("plan the work")
    term.keys("Enter")
    # Once the turn is over no item is shown as running: the toolbar has the count only.
    screen = await term.wait(lambda s: "Board set." in s and idle(s, "todos 1/3"))
    assert "☰ todos 1/3 · ▸ Fixing the bug · next: Run the tests" in screen
    term.type("/todo")
    term.keys("Enter")
    screen = await term.wait(lambda s: "› /todo" in s and "Run the tests" in s.split("› /todo")[1])
    board = screen.split("› /todo")[1]  # the server's board, whatever its marks
    assert board.index("Read the code") < board.index("Fix the bug") < board.index("Run the tests")


# --- approvals ----------------------------------------------------------------------------


async def test_a_plan_is_approved_in_plan_mode_and_the_file_appears(
    api: FakeMessagesAPI, start_chat: Any, workspace: Path
) -> None:
    plan = "# Plan\n\n1. Write `plan.txt` with a greeting.\n2. Stop."
    api.enqueue(
        {"content": [tool_use("exit_plan_mode", "toolu_p1", plan=plan)]},
        {"content": [tool_use("write_file", "toolu_p2", path="plan.txt", content="hi\n")]},
        {"content": [text("Wrote plan.txt.")]},
    )
    term = await start_chat("--mode", "plan", toolbar="plan · claude-test-1")
    term.type("make plan.txt")
    term.keys("Enter")
    screen = await term.wait("Approve the plan?")
    assert "Write plan.txt with a greeting." in screen  # rendered markdown: no backticks
    term.type("xyz q")  # not a choice: only a reminder of them
    term.keys("Enter")
    await term.wait("“xyz q” is not an answer: type a, m or r and Enter")
    assert "Approve the plan?" in term.screen()
    assert not (workspace / "plan.txt").exists()

    term.keys("C-c")
    term.type("a")
    term.keys("Enter")
    screen = await term.wait("Wrote plan.txt.")
    assert "plan approved" in screen
    assert "✓ write_file plan.txt" in screen
    assert (workspace / "plan.txt").read_text() == "hi\n"
    await term.wait(lambda s: "accept edits · claude-test-1" in bottom(s, 1)[0])


async def test_a_denied_edit_leaves_the_file_alone(
    api: FakeMessagesAPI, start_chat: Any, workspace: Path
) -> None:
    notes = workspace / "notes.md"
    notes.write_text("keep me\n")
    edit = {"old_string": "keep me", "new_string": "changed"}
    api.enqueue(
        {"content": [tool_use("read_file", "toolu_e1", path="notes.md")]},
        {"content": [tool_use("edit_file", "toolu_e2", path="notes.md", **edit)]},
        {"content": [text("Left it alone.")]},
    )
    term = await start_chat()
    term.type("edit notes")
    term.keys("Enter")
    screen = await term.wait("Allow edit_file notes.md?")
    assert "-keep me" in screen and "+changed" in screen
    term.type("hello")  # typing is not an answer
    term.keys("Enter")
    await term.wait("“hello” is not an answer")
    assert "Allow edit_file notes.md?" in term.screen()

    term.keys("C-c")
    term.type("n")
    term.keys("Enter")
    await term.wait("feedback ›")
    term.type("not today")
    term.keys("Enter")
    screen = await term.wait("Left it alone.")
    assert "✗ edit_file notes.md" in screen
    assert notes.read_text() == "keep me\n"
    result = last_user_content(api, 2)[0]
    assert result["is_error"] is True and "not today" in str(result["content"])


async def test_a_checkpoint_asks_continue_or_stop_and_continue_goes_on(
    api: FakeMessagesAPI, start_chat: Any, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("a\n")
    api.enqueue(
        {"content": [tool_use("read_file", "toolu_c1", path="a.txt")]},
        {"content": [tool_use("read_file", "toolu_c2", path="a.txt")]},
        {"content": [text("Read it twice.")]},
    )
    term = await start_chat("--tool-budget", "1")
    term.type("read twice")
    term.keys("Enter")
    await term.wait("1 tool calls so far (read_file ✓). Continue?")
    term.type("y")  # not a choice here
    term.keys("Enter")
    await term.wait("“y” is not an answer: type c or s and Enter")
    assert "[c] continue" in term.screen()
    term.keys("C-c")
    term.type("c")
    term.keys("Enter")
    screen = await term.wait(lambda s: "Read it twice." in s and idle(s))
    assert screen.count("✓ read_file a.txt") == 2


async def test_ctrl_o_shows_command_output(api: FakeMessagesAPI, start_chat: Any) -> None:
    api.enqueue(
        {"content": [tool_use("bash", "toolu_o1", command="echo first-line; echo second-line")]},
        {"content": [text("Echoed.")]},
    )
    term = await start_chat()
    term.keys("C-o")
    await term.wait("· command output shown")
    term.type("echo two lines")
    term.keys("Enter")
    # `echo` may count as read-only (no question) or not (allowed here).
    screen = await term.wait(lambda s: "Allow bash echo" in s or "Echoed." in s)
    if "Allow bash echo" in screen:
        term.type("y")
        term.keys("Enter")
    screen = await term.wait(lambda s: "Echoed." in s and idle(s))
    lines = screen.splitlines()
    done = next(n for n, line in enumerate(lines) if line.startswith("✓ bash echo"))
    assert [line.strip() for line in lines[done + 1 : done + 3]] == ["first-line", "second-line"]


# --- keys, sessions, resilience -----------------------------------------------------------


async def test_alt_enter_adds_a_line_and_enter_sends_them_all(
    api: FakeMessagesAPI, start_chat: Any
) -> None:
    api.enqueue({"content": [text("Two lines received.")]})
    term = await start_chat()
    term.type("first line")
    term.keys("M-Enter")
    term.type("second line")
    await term.wait(
        lambda s: [x.rstrip() for x in bottom(s)[:2]] == ["› first line", "  second line"]
    )
    term.keys("Enter")
    await term.wait(lambda s: "Two lines received." in s and idle(s))
    assert last_user_text(api, 0) == "first line\nsecond line"


async def test_ctrl_c_clears_the_line_and_twice_exits(start_chat: Any) -> None:
    term = await start_chat()
    term.type("half a thought")
    await term.wait("› half a thought")
    term.keys("C-c")
    await term.wait(lambda s: bottom(s, 2)[0].rstrip() == "›")
    term.keys("C-c")
    await term.wait("Ctrl-C again to exit")
    term.keys("C-c")
    deadline = time.monotonic() + WAIT
    while not term.exited():
        assert time.monotonic() < deadline, term.screen()
        await asyncio.sleep(0.1)


async def test_resume_redraws_the_session_from_its_transcript(
    api: FakeMessagesAPI, start_chat: Any
) -> None:
    api.enqueue({"content": [text("Remember the number 42.")]})
    term = await start_chat()
    term.type("pick a number")
    term.keys("Enter")
    await term.wait("Remember the number 42.")
    term.type("/sessions")
    term.keys("Enter")
    screen = await term.wait("(current)")
    session_id = re.search(r"^(\S+)\s.*\(current\)", screen, re.M)
    assert session_id, screen
    term.type("/clear")
    term.keys("Enter")
    await term.wait("Started a new session.")
    term.keys("C-l")  # a clean screen: what follows comes from the transcript
    await term.wait(lambda s: "Remember the number 42." not in s)
    term.type(f"/resume {session_id.group(1)}")
    term.keys("Enter")
    screen = await term.wait(f"── session {session_id.group(1)} ──")
    screen = await term.wait("Remember the number 42.")
    assert "› pick a number" in screen


async def test_resume_option_starts_in_a_stored_session_and_continues_it(
    api: FakeMessagesAPI, start_chat: Any, terminal: Terminal
) -> None:
    api.enqueue({"content": [text("The answer is 42.")]}, {"content": [text("Still 42.")]})
    term = await start_chat()
    term.type("what is the answer")
    term.keys("Enter")
    await term.wait("The answer is 42.")
    term.type("/sessions")
    term.keys("Enter")
    found = re.search(r"^(\S+)\s.*\(current\)", await term.wait("(current)"), re.M)
    assert found, term.screen()
    terminal.hang_up()  # the terminal goes away: so does the chat

    term = await start_chat("--resume", found.group(1))
    screen = await term.wait(lambda s: "The answer is 42." in s and idle(s))
    assert "› what is the answer" in screen
    term.type("and now?")
    term.keys("Enter")
    await term.wait("Still 42.")
    assert "The answer is 42." in str(api.message_requests()[1].body["messages"])


@pytest.mark.parametrize("start", ["spawned", "forked from the warm template"])
async def test_a_server_crash_is_reported_and_the_session_resumed(
    api: FakeMessagesAPI, start_chat: Any, start: str
) -> None:
    """Forked: from the test process's template (``tests/warm.py``), which every ``tiller
    chat`` of these tests uses; its servers of earlier tests are told apart by pid."""
    api.enqueue(
        {"content": [text("First answer.")]},
        {"content": [text("Second answer, same session.")]},
    )
    warm = suite()
    template = await warm.ready()
    earlier = set(children(template))
    env = {"TILLER_WARM": "0"} if start == "spawned" else {"XDG_RUNTIME_DIR": str(warm.root)}
    term = await start_chat(env=env)
    term.type("first")
    term.keys("Enter")
    await term.wait("First answer.")
    if start == "spawned":
        servers = children(term.pid())
    else:
        servers = [pid for pid in children(template) if pid not in earlier]
    assert len(servers) == 1, servers
    os.kill(servers[0], signal.SIGKILL)
    await the_chat_resumes(term, api, servers[0])


async def the_chat_resumes(term: Terminal, api: FakeMessagesAPI, server: int) -> None:
    """After its server was killed: the notice, a new server, the same session."""

    screen = await term.wait("· resumed session")
    assert "the server exited unexpectedly (exit code -9)" in screen
    await term.wait(lambda s: TOOLBAR in bottom(s, 1)[0])
    assert not alive(server)
    term.type("second")
    term.keys("Enter")
    await term.wait("Second answer, same session.")
    history = api.message_requests()[1].body["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert "first" in str(history[0]["content"])


async def test_a_resized_terminal_keeps_the_layout(api: FakeMessagesAPI, start_chat: Any) -> None:
    api.enqueue({"content": [text("Still here after the resize.")]})
    term = await start_chat()
    term.tmux("resize-window", "-t", "chat", "-x", "60", "-y", "20")

    def narrow(screen: str) -> bool:
        """One frame, at the bottom: none left behind by the redraw."""
        lines = screen.splitlines()
        prompts = [line for line in lines if line.rstrip() == "›"]
        toolbars = [line for line in lines if TOOLBAR in line]
        return len(prompts) == len(toolbars) == 1 and prompt_and_toolbar_at_the_bottom(screen)

    await term.wait(narrow)
    term.type("still there?")
    term.keys("Enter")
    await term.wait(lambda s: "Still here after the resize." in s and narrow(s))
    assert term.tmux("display-message", "-p", "-t", "chat", "#{pane_width}").strip() == "60"
