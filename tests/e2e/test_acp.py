"""Tiller as an ACP agent: the SDK's own client side drives ``python -m tiller --acp`` over
stdio, the real ``anthropic`` SDK talks to the fake Messages API (env ANTHROPIC_BASE_URL /
ANTHROPIC_API_KEY), and the test plays the editor (answering ``session/request_permission``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
import pytest_asyncio
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.core import ClientSideConnection
from acp.interfaces import Client
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    ContentToolCallContent,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    FileEditToolCallContent,
    FileSystemCapabilities,
    ImageContentBlock,
    Implementation,
    KillTerminalResponse,
    McpServerStdio,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    ResourceContentBlock,
    TerminalExitStatus,
    TerminalOutputResponse,
    TextContentBlock,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

import mcp_servers
from fakeapi import FakeMessagesAPI
from processes import until
from test_turn_basics import text, tool_use
from tiller.model.history import Message, problems
from warm import suite

# Served as an editor gets it: by a server forked from the warm template (the test process's
# own, tests/e2e/conftest.py); `start` waits until it is ready, as the harness does, so none
# of these spawn (a cold server per test while the template warms up only costs CPU; the
# spawned start is test_acp_cold_initialize.py's).
SERVER = (sys.executable, "-m", "tiller", "--warm", "--acp")
# After the client's EOF the agent stops its MCP servers and exits; on 2 busy cores that may
# outlast the SDK's 2 s default, whose terminate() then races the exit (ProcessLookupError).
EXIT_WAIT = {"shutdown_timeout": 60.0}
Choose = Callable[[ToolCallUpdate, list[PermissionOption]], Awaitable[str | None]]


async def reject(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str | None:
    return next(o.option_id for o in options if o.kind == "reject_once")


async def allow_once(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str | None:
    return next(o.option_id for o in options if o.kind == "allow_once")


def as_client(editor: Editor) -> Client:
    """The editor as the SDK's ``Client``: it implements the requests an editor with its
    capabilities is sent; the SDK answers method-not-found for the rest."""
    return cast(Client, editor)


def shown_text(call: ToolCallUpdate) -> str:
    """The text a tool call shows (its first content block)."""
    assert call.content, call
    shown = call.content[0]
    assert isinstance(shown, ContentToolCallContent) and isinstance(shown.content, TextContentBlock)
    return shown.content.text


def shown_diff(call: ToolCallUpdate) -> tuple[str | None, str]:
    """The diff a tool call shows (its first content block): old text, new text."""
    assert call.content, call
    shown = call.content[0]
    assert isinstance(shown, FileEditToolCallContent)
    return shown.old_text, shown.new_text


@dataclass
class Editor:
    """The client side of ACP as an editor would be: records updates, answers permissions."""

    updates: list[Any] = field(default_factory=list)
    asked: list[tuple[ToolCallUpdate, list[PermissionOption]]] = field(default_factory=list)
    choose: Choose = reject
    capabilities: ClientCapabilities = field(default_factory=ClientCapabilities)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def _add(self, target: list[Any], item: Any) -> None:
        async with self._changed:
            target.append(item)
            self._changed.notify_all()

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        await self._add(self.asked, (tool_call, options))
        picked = await self.choose(tool_call, options)
        if picked is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=picked)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        await self._add(self.updates, update)

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 15.0) -> Any:
        async def waiting() -> Any:
            async with self._changed:
                while not (value := predicate()):
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._changed.wait(), 0.05)
                return value

        return await asyncio.wait_for(waiting(), timeout)

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def message_text(self) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk"))

    def statuses(self, call_id: str) -> list[str]:
        return [
            u.status
            for u in self.updates
            if u.session_update in ("tool_call", "tool_call_update")
            and u.tool_call_id == call_id
            and u.status is not None
        ]

    def call(self, call_id: str) -> Any:
        return next(u for u in self.of("tool_call") if u.tool_call_id == call_id)

    def last_update(self, call_id: str) -> Any:
        return [u for u in self.of("tool_call_update") if u.tool_call_id == call_id][-1]


@dataclass
class Agent:
    conn: ClientSideConnection
    editor: Editor
    workspace: Path

    async def new(self) -> str:
        session = await self.conn.new_session(cwd=str(self.workspace), mcp_servers=[])
        return session.session_id

    async def say(self, session_id: str, words: str) -> str:
        answer = await self.conn.prompt(session_id=session_id, prompt=[text_block(words)])
        return answer.stop_reason


def agent_env(api: FakeMessagesAPI, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        ANTHROPIC_BASE_URL=api.base_url,
        ANTHROPIC_API_KEY="test-key",
        TILLER_DATA_DIR=str(data_dir),
        TILLER_MODEL="claude-test-1",
        TILLER_LOG_LEVEL="WARNING",
        CLAUDE_CONFIG_DIR=str(data_dir / "user-claude"),  # never the user's own rules
        TILLER_CONFIG_DIR=str(data_dir / "user-tiller"),
    )
    return env


StartAgent = Callable[[Editor], Any]


@pytest_asyncio.fixture
async def start(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> AsyncIterator[Callable[..., contextlib.AbstractAsyncContextManager[Agent]]]:
    """``async with start(editor) as agent``: a fresh ``tiller --acp`` process, initialized."""
    data_dir = tmp_path / "data"
    data_dir.mkdir(exist_ok=True)
    await until(suite().connectable, 60)

    @contextlib.asynccontextmanager
    async def starting(editor: Editor, **options: Any) -> AsyncIterator[Agent]:
        """``options``: Tiller initializationOptions, sent as ``_meta.tiller``."""
        with (tmp_path / "agent-stderr.log").open("ab") as stderr:
            async with spawn_agent_process(
                as_client(editor),
                *SERVER,
                env=agent_env(api, data_dir),
                cwd=workspace,
                transport_kwargs={"stderr": stderr.fileno(), **EXIT_WAIT},
            ) as (conn, _process):
                init = await conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=editor.capabilities,
                    client_info=Implementation(name="tiller-tests", version="0"),
                    **({"tiller": options} if options else {}),
                )
                assert init.agent_capabilities is not None
                yield Agent(conn, editor, workspace)

    yield starting


def assert_valid_history(api: FakeMessagesAPI) -> None:
    last = api.message_requests()[-1].body["messages"]
    assert problems([Message.from_api(m) for m in last]) == []


def real_path(path: Path) -> Path:
    return path.resolve()


def tool_results(api: FakeMessagesAPI, index: int = -1) -> list[dict[str, Any]]:
    messages = api.message_requests()[index].body["messages"]
    return [
        block
        for m in messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_result"
    ]


# --- initialize and sessions ------------------------------------------------------------------


async def test_initialize_advertises_load_session_embedded_context_and_mcp(
    start: Any, workspace: Path
) -> None:
    editor = Editor()
    async with start(editor) as agent:
        init = await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        caps = init.agent_capabilities
        assert init.protocol_version == 1
        assert caps.load_session is True
        assert caps.prompt_capabilities.embedded_context is True
        assert caps.prompt_capabilities.image is True
        assert caps.mcp_capabilities.http is True and caps.mcp_capabilities.sse is True
        assert caps.session_capabilities.list is not None
        assert init.agent_info is not None and init.agent_info.name == "tiller"

        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.modes is not None
        assert session.modes.current_mode_id == "default"
        assert [m.id for m in session.modes.available_modes] == ["default", "acceptEdits", "plan"]
        options = {
            o.root.id if hasattr(o, "root") else o.id: o for o in session.config_options or []
        }
        assert options["model"].current_value == "claude-test-1"
        assert options["mode"].current_value == "default"

        # Slash commands arrive right after the answer; session switches are the editor's.
        commands = await editor.wait_for(lambda: editor.of("available_commands_update"))
        names = {c.name for c in commands[0].available_commands}
        assert {"help", "mode", "model", "plan", "todo", "compact"} <= names
        assert not names & {"clear", "resume", "fork", "queue"}


PNG_1PX = (  # a 1×1 png
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAA"
    "AABJRU5ErkJggg=="
)


async def test_images_and_resource_links_reach_the_model_as_blocks(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('hello')\n")
    api.enqueue({"content": [text("Seen.")]})
    editor = Editor()
    async with start(editor) as agent:
        session_id = await agent.new()
        link = ResourceContentBlock(
            type="resource_link", name="app.py", uri=(workspace / "src" / "app.py").as_uri()
        )
        image = ImageContentBlock(type="image", data=PNG_1PX, mime_type="image/png")
        answer = await agent.conn.prompt(
            session_id=session_id,
            prompt=[text_block("what do "), link, text_block(" and this show?"), image],
        )
        assert answer.stop_reason == "end_turn"
    [request] = api.message_requests()
    blocks = request.body["messages"][0]["content"]
    assert [b["type"] for b in blocks] == ["text", "image", "text"]
    assert blocks[0]["text"].startswith('<context kind="file" name="src/app.py">')
    assert "print('hello')" in blocks[0]["text"]
    assert blocks[1]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG_1PX}
    assert blocks[2]["text"] == "what do @src/app.py and this show?"


async def test_available_commands_update_lists_the_workspaces_custom_commands(
    start: Any, workspace: Path
) -> None:
    commands_dir = workspace / ".claude" / "commands"
    commands_dir.mkdir(parents=True)
    (commands_dir / "review.md").write_text(
        "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $ARGUMENTS\n"
    )
    editor = Editor()
    async with start(editor) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        commands = await editor.wait_for(lambda: editor.of("available_commands_update"))
        listed = {c.name: c for c in commands[0].available_commands}
        assert listed["review"].description == "Review a file"
        hint = listed["review"].input
        assert hint is not None and hint.root.hint == "<file>"
        assert "help" in listed
        (commands_dir / "ship.md").write_text("Ship it.\n")
        assert await agent.say(session.session_id, "/help") == "end_turn"
        again = await editor.wait_for(lambda: editor.of("available_commands_update")[1:])
        assert "ship" in {c.name for c in again[0].available_commands}


async def test_tiller_acp_serves_the_agent_and_reads_settings_from_initialize_meta(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    editor = Editor()
    command = (sys.executable, "-m", "tiller.faces.cli", "acp")
    async with spawn_agent_process(
        as_client(editor),
        *command,
        env=agent_env(api, tmp_path / "data"),
        cwd=workspace,
        transport_kwargs=EXIT_WAIT,
    ) as (conn, _process):
        with pytest.raises(RequestError) as bad:
            await conn.initialize(protocol_version=PROTOCOL_VERSION, tiller={"toolBudget": -1})
        assert bad.value.code == -32602
        assert "toolBudget" in str(bad.value)
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION, tiller={"permissionMode": "plan"}
        )
        assert init.agent_info is not None and init.agent_info.name == "tiller"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.modes is not None and session.modes.current_mode_id == "plan"


# --- a turn -----------------------------------------------------------------------------------


async def test_prompt_reads_edits_with_permission_and_runs_a_command(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("hello\n")
    api.enqueue(
        {"content": [text("Reading."), tool_use("read_file", "toolu_r", path="notes.txt")]},
        {
            "content": [
                tool_use(
                    "edit_file",
                    "toolu_e",
                    path="notes.txt",
                    old_string="hello",
                    new_string="hello world",
                )
            ]
        },
        {"content": [tool_use("bash", "toolu_b", command="echo ran > out.txt && echo wrote")]},
        {"content": [text("All done.")]},
    )
    editor = Editor(choose=allow_once)
    async with start(editor) as agent:
        session_id = await agent.new()
        assert await agent.say(session_id, "tidy the notes") == "end_turn"

    assert (workspace / "notes.txt").read_text() == "hello world\n"
    assert (workspace / "out.txt").read_text() == "ran\n"
    assert editor.message_text() == "Reading.All done."
    assert_valid_history(api)

    read = editor.call("toolu_r")
    assert (read.kind, read.title) == ("read", "Read notes.txt")
    assert read.locations[0].path == str(workspace / "notes.txt")
    assert editor.statuses("toolu_r") == ["pending", "in_progress", "completed"]

    edit = editor.call("toolu_e")
    assert edit.kind == "edit"
    assert edit.content[0].type == "diff"
    assert (edit.content[0].old_text, edit.content[0].new_text) == ("hello", "hello world")
    assert editor.statuses("toolu_e") == ["pending", "in_progress", "completed"]

    run = editor.call("toolu_b")
    assert run.kind == "execute"
    assert editor.statuses("toolu_b") == ["pending", "in_progress", "completed"]
    assert "wrote" in editor.last_update("toolu_b").content[0].content.text

    # Two questions (the edit with its full diff, the command), none for the read.
    assert [call.tool_call_id for call, _ in editor.asked] == ["toolu_e", "toolu_b"]
    edit_call, edit_options = editor.asked[0]
    assert shown_diff(edit_call) == ("hello\n", "hello world\n")
    assert [o.kind for o in edit_options] == ["allow_once", "allow_always", "reject_once"]


@pytest.mark.skipif(not mcp_servers.INSTALLED, reason=mcp_servers.NOT_INSTALLED)
async def test_mcp_servers_passed_in_session_new_serve_the_model(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tool = "mcp__time__get_current_time"
    api.enqueue(
        {"content": [tool_use("tool_search", "toolu_s", query="select:" + tool)]},
        {"content": [tool_use(tool, "toolu_t", timezone="UTC")]},
        {"content": [text("It is now.")]},
    )
    time = mcp_servers.time_server()
    passed = McpServerStdio(name="time", command=time["command"], args=time["args"], env=[])
    editor = Editor(choose=allow_once)
    async with start(editor) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[passed])
        assert await agent.say(session.session_id, "what time is it?") == "end_turn"
    (result,) = [r for r in tool_results(api) if r["tool_use_id"] == "toolu_t"]
    assert not result.get("is_error")
    assert '"timezone": "UTC"' in result["content"][0]["text"]
    call = editor.call("toolu_t")
    assert call.title == "get_current_time (MCP server time)"
    assert [c.tool_call_id for c, _ in editor.asked] == ["toolu_t"]  # the search runs unasked
    # Issue 36: "Allow this session" was not in the docs' table; the name says what it allows.
    [(_, options)] = editor.asked
    assert [(o.option_id, o.kind, o.name) for o in options] == [
        ("allow", "allow_once", "Allow once"),
        ("allowSession", "allow_always", "Allow get_current_time from time for this session"),
        ("deny", "reject_once", "Reject"),
    ]
    assert_valid_history(api)


async def test_a_denied_edit_leaves_the_file_unchanged(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("keep me\n")
    api.enqueue(
        {"content": [tool_use("read_file", "toolu_r", path="notes.txt")]},
        {
            "content": [
                tool_use(
                    "edit_file",
                    "toolu_e",
                    path="notes.txt",
                    old_string="keep",
                    new_string="lose",
                )
            ]
        },
        {"content": [text("Understood, leaving it.")]},
    )
    editor = Editor(choose=reject)
    async with start(editor) as agent:
        session_id = await agent.new()
        assert await agent.say(session_id, "change it") == "end_turn"

    assert (workspace / "notes.txt").read_text() == "keep me\n"
    assert editor.statuses("toolu_e") == ["pending", "failed"]
    denied = [r for r in tool_results(api) if r["tool_use_id"] == "toolu_e"]
    assert denied and denied[0]["is_error"] is True
    assert_valid_history(api)


async def test_a_permission_request_that_fails_counts_as_no(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    async def broken(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str | None:
        raise RequestError(-32603, "the editor's dialog crashed")

    async def unknown_option(
        tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> str | None:
        return "yes-please"

    api.enqueue(
        {"content": [tool_use("write_file", "toolu_w1", path="a.txt", content="x")]},
        {"content": [tool_use("write_file", "toolu_w2", path="b.txt", content="x")]},
        {"content": [text("ok")]},
    )
    editor = Editor(choose=broken)
    async with start(editor) as agent:
        session_id = await agent.new()
        task = asyncio.create_task(agent.say(session_id, "write"))
        await editor.wait_for(lambda: editor.asked)
        editor.choose = unknown_option
        assert await task == "end_turn"

    assert not (workspace / "a.txt").exists()
    assert not (workspace / "b.txt").exists()
    assert editor.statuses("toolu_w1")[-1] == "failed"
    assert editor.statuses("toolu_w2")[-1] == "failed"


# --- the editor's buffers (fs/*) -------------------------------------------------------------


@dataclass
class BufferEditor(Editor):
    """An editor offering ``fs/*``: its open buffers (absolute path -> text) hold unsaved
    changes the disk does not have; a write updates the buffer only (the user saves)."""

    buffers: dict[str, str] = field(default_factory=dict)
    fs_calls: list[tuple[str, str]] = field(default_factory=list)
    capabilities: ClientCapabilities = field(
        default_factory=lambda: ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)
        )
    )

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:  # fmt: skip
        self.fs_calls.append(("read", path))
        if path not in self.buffers:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.fs_calls.append(("write", path))
        self.buffers[path] = content
        return WriteTextFileResponse()


async def test_files_are_read_and_edited_through_the_editors_unsaved_buffers(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    notes = real_path(workspace) / "notes.txt"  # the editor gets paths with links resolved
    notes.write_text("saved text\n")
    (workspace / "plain.txt").write_text("only on disk\n")
    api.enqueue(
        {
            "content": [
                tool_use("read_file", "toolu_r", path="notes.txt"),
                tool_use("read_file", "toolu_p", path="plain.txt"),
            ]
        },
        {
            "content": [
                tool_use(
                    "edit_file",
                    "toolu_e",
                    path="notes.txt",
                    old_string="unsaved",
                    new_string="edited",
                )
            ]
        },
        {"content": [text("Edited your buffer.")]},
    )
    editor = BufferEditor(choose=allow_once, buffers={str(notes): "unsaved text\n"})
    async with start(editor) as agent:
        session_id = await agent.new()
        assert await agent.say(session_id, "edit the notes") == "end_turn"

    # The model saw the buffer, not the disk; a file the editor does not hold came from disk.
    results = {r["tool_use_id"]: r for r in tool_results(api, 1)}
    assert "     1\tunsaved text" in str(results["toolu_r"]["content"])
    assert "\tsaved text" not in str(results["toolu_r"]["content"])
    assert "     1\tonly on disk" in str(results["toolu_p"]["content"])
    # The confirmation diffed the buffer; the approved edit arrived as fs/write_text_file.
    edit_call, _ = editor.asked[0]
    assert shown_diff(edit_call) == (
        "unsaved text\n",
        "edited text\n",
    )
    assert ("write", str(notes)) in editor.fs_calls
    assert editor.buffers[str(notes)] == "edited text\n"
    assert notes.read_text() == "saved text\n"  # the user saves, not the agent
    assert editor.statuses("toolu_e")[-1] == "completed"
    assert_valid_history(api)


# --- the editor's terminals (terminal/*) -------------------------------------------------------


@dataclass
class TerminalEditor(Editor):
    """An editor offering ``terminal/*``: it runs what it is given as its own processes."""

    created: list[dict[str, Any]] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    capabilities: ClientCapabilities = field(
        default_factory=lambda: ClientCapabilities(terminal=True)
    )
    _procs: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)
    _output: dict[str, bytearray] = field(default_factory=dict)
    _pumps: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    async def create_terminal(
        self, session_id: str, command: str, args: list[str] | None = None,
        env: list[EnvVariable] | None = None, cwd: str | None = None,
        output_byte_limit: int | None = None, **kwargs: Any,
    ) -> CreateTerminalResponse:  # fmt: skip
        terminal_id = f"term-{len(self.created) + 1}"
        changes = {e.name: e.value for e in env or []}
        self.created.append({"command": command, "args": args, "cwd": cwd, "env": changes})
        proc = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, env={**os.environ, **changes},
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        output = self._output[terminal_id] = bytearray()

        async def pump() -> None:
            assert proc.stdout is not None
            while chunk := await proc.stdout.read(4096):
                output.extend(chunk)

        self._procs[terminal_id] = proc
        self._pumps[terminal_id] = asyncio.create_task(pump())
        return CreateTerminalResponse(terminal_id=terminal_id)

    def _status(self, code: int) -> dict[str, Any]:
        if code < 0:
            return {"exit_code": None, "signal": signal.Signals(-code).name}
        return {"exit_code": code, "signal": None}

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        proc = self._procs[terminal_id]
        status = None
        if proc.returncode is not None:
            await self._pumps[terminal_id]
            status = TerminalExitStatus(**self._status(proc.returncode))
        text = self._output[terminal_id].decode(errors="replace")
        return TerminalOutputResponse(output=text, truncated=False, exit_status=status)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        code = await self._procs[terminal_id].wait()
        await self._pumps[terminal_id]
        return WaitForTerminalExitResponse(**self._status(code))

    def _kill(self, terminal_id: str) -> None:
        proc = self._procs[terminal_id]
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        self._kill(terminal_id)
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        self._kill(terminal_id)
        await self.add_released(terminal_id)
        return ReleaseTerminalResponse()

    async def add_released(self, terminal_id: str) -> None:
        await self._add(self.released, terminal_id)


async def test_approved_commands_run_in_the_editors_terminal_unasked_ones_stay_here(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("hello\n")
    approved = 'echo "key=[$ANTHROPIC_API_KEY]" && echo made > made.txt'
    api.enqueue(
        {"content": [tool_use("bash", "toolu_ro", command="cat notes.txt")]},
        {"content": [tool_use("bash", "toolu_ok", command=approved)]},
        {"content": [tool_use("bash", "toolu_bad", command="echo failing; exit 3")]},
        {"content": [text("Done.")]},
    )
    editor = TerminalEditor(choose=allow_once)
    async with start(editor) as agent:
        session_id = await agent.new()
        assert await agent.say(session_id, "run things") == "end_turn"
        await editor.wait_for(lambda: len(editor.released) == 2)

    # The read-only command ran unasked, in Tiller's runner: never in the editor's terminal.
    assert [call.tool_call_id for call, _ in editor.asked] == ["toolu_ok", "toolu_bad"]
    assert [c["args"] for c in editor.created] == [["-c", approved], ["-c", "echo failing; exit 3"]]
    first = editor.created[0]
    assert (first["command"], first["cwd"]) == ("bash", str(real_path(workspace)))
    assert first["env"]["ANTHROPIC_API_KEY"] == ""  # Tiller's secrets are blanked there
    assert first["env"]["GIT_TERMINAL_PROMPT"] == "0"
    assert (workspace / "made.txt").read_text() == "made\n"
    results = {r["tool_use_id"]: r for r in tool_results(api)}
    assert "hello" in str(results["toolu_ro"]["content"])
    assert "key=[]" in str(results["toolu_ok"]["content"])
    assert results["toolu_ok"].get("is_error") is not True
    assert results["toolu_bad"]["is_error"] is True
    assert "exit code 3" in str(results["toolu_bad"]["content"])
    assert editor.statuses("toolu_ok")[-1] == "completed"
    assert sorted(editor.released) == ["term-1", "term-2"]
    assert_valid_history(api)


async def test_cancel_mid_command_in_the_editors_terminal_releases_it(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    api.enqueue(
        {"content": [tool_use("bash", "toolu_s", command="sleep 30; echo late > late.txt")]},
        {"content": [text("ok")]},
    )
    editor = TerminalEditor(choose=allow_once)
    async with start(editor) as agent:
        session_id = await agent.new()
        prompt = asyncio.create_task(agent.say(session_id, "wait a while"))
        await editor.wait_for(lambda: editor.created)
        await agent.conn.cancel(session_id=session_id)
        assert await asyncio.wait_for(prompt, 10) == "cancelled"
        await editor.wait_for(lambda: editor.released == ["term-1"])
        assert await agent.say(session_id, "next") == "end_turn"

    assert editor.statuses("toolu_s")[-1] == "failed"
    assert not (workspace / "late.txt").exists()
    assert_valid_history(api)


# --- plan mode --------------------------------------------------------------------------------


async def test_plan_mode_blocks_writes_until_the_plan_is_approved(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    api.enqueue(
        {"content": [tool_use("write_file", "toolu_w1", path="new.txt", content="early")]},
        {"content": [tool_use("exit_plan_mode", "toolu_p", plan="1. Write new.txt")]},
        {"content": [tool_use("write_file", "toolu_w2", path="new.txt", content="planned")]},
        {"content": [text("Implemented.")]},
    )
    seen_file_at_approval: list[bool] = []

    async def approve_plan(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str:
        seen_file_at_approval.append((workspace / "new.txt").exists())
        return "acceptEdits"

    editor = Editor(choose=approve_plan)
    async with start(editor) as agent:
        session_id = await agent.new()
        await agent.conn.set_session_mode(session_id=session_id, mode_id="plan")
        assert await agent.say(session_id, "plan, then write new.txt") == "end_turn"

    # The early write was refused by the agent itself: nobody was asked.
    assert editor.statuses("toolu_w1") == ["pending", "failed"]
    assert seen_file_at_approval == [False]
    assert len(editor.asked) == 1
    plan_call, plan_options = editor.asked[0]
    assert plan_call.tool_call_id == "toolu_p"
    assert shown_text(plan_call) == "1. Write new.txt"
    assert [o.option_id for o in plan_options] == ["acceptEdits", "default", "plan"]
    # Approved into acceptEdits: the planned write ran without a question.
    assert (workspace / "new.txt").read_text() == "planned"
    assert [u.current_mode_id for u in editor.of("current_mode_update")] == [
        "plan",
        "acceptEdits",
    ]


async def test_a_rejected_plan_keeps_plan_mode_and_writes_nothing(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    api.enqueue(
        {"content": [tool_use("exit_plan_mode", "toolu_p", plan="1. Write new.txt")]},
        {"content": [text("Still planning.")]},
    )
    editor = Editor(choose=reject)
    async with start(editor) as agent:
        session_id = await agent.new()
        await agent.conn.set_config_option(config_id="mode", session_id=session_id, value="plan")
        assert await agent.say(session_id, "plan it") == "end_turn"

    [(plan_call, options)] = editor.asked
    assert (plan_call.tool_call_id, plan_call.kind) == ("toolu_p", "switch_mode")
    assert shown_text(plan_call) == "1. Write new.txt"
    # The modes by the words every face uses (issue 36: not "auto-accept" / "manually approve").
    assert [(o.option_id, o.kind, o.name) for o in options] == [
        ("acceptEdits", "allow_always", "Yes, then accept edits"),
        ("default", "allow_once", "Yes, then ask before edits"),
        ("plan", "reject_once", "No, keep planning"),
    ]
    assert editor.statuses("toolu_p")[-1] == "failed"
    assert not (workspace / "new.txt").exists()
    assert [u.current_mode_id for u in editor.of("current_mode_update")] == ["plan"]


# --- cancel -----------------------------------------------------------------------------------


async def test_cancel_mid_stream_answers_cancelled_and_the_next_request_is_valid(
    start: Any, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {
            "content": [
                text("The first part arrives, then the model stalls…"),
                tool_use("bash", "toolu_never", command="echo never"),
            ],
            "hangAfterEvents": 6,
        },
        {"content": [text("fresh answer")]},
    )
    editor = Editor(choose=allow_once)
    async with start(editor) as agent:
        session_id = await agent.new()
        prompt = asyncio.create_task(agent.say(session_id, "long answer please"))
        await editor.wait_for(lambda: editor.of("agent_message_chunk"))
        await agent.conn.cancel(session_id=session_id)
        assert await asyncio.wait_for(prompt, 10) == "cancelled"
        await api.wait_disconnects(1, timeout=5)
        assert await agent.say(session_id, "try again") == "end_turn"

    assert_valid_history(api)
    messages = api.message_requests()[-1].body["messages"]
    assert messages[1]["content"][0]["text"].startswith("The first part")
    assert not editor.asked


async def test_cancel_mid_command_answers_cancelled_and_the_next_request_is_valid(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    api.enqueue(
        {"content": [tool_use("bash", "toolu_s", command="sleep 30; echo late > late.txt")]},
        {"content": [text("ok")]},
    )
    editor = Editor(choose=allow_once)
    async with start(editor) as agent:
        session_id = await agent.new()
        prompt = asyncio.create_task(agent.say(session_id, "wait a while"))
        await editor.wait_for(lambda: "in_progress" in editor.statuses("toolu_s"))
        await agent.conn.cancel(session_id=session_id)
        assert await asyncio.wait_for(prompt, 10) == "cancelled"
        assert editor.statuses("toolu_s")[-1] == "failed"
        assert await agent.say(session_id, "next") == "end_turn"

    assert_valid_history(api)
    interrupted = [r for r in tool_results(api) if r["tool_use_id"] == "toolu_s"]
    assert interrupted[0]["is_error"] is True
    assert not (workspace / "late.txt").exists()


async def test_cancel_while_the_editor_is_asking_answers_cancelled(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    never: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

    async def hold(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str | None:
        return await never

    api.enqueue(
        {"content": [tool_use("write_file", "toolu_w", path="x.txt", content="x")]},
        {"content": [text("ok")]},
    )
    editor = Editor(choose=hold)
    async with start(editor) as agent:
        session_id = await agent.new()
        prompt = asyncio.create_task(agent.say(session_id, "write"))
        await editor.wait_for(lambda: editor.asked)
        await agent.conn.cancel(session_id=session_id)
        assert await asyncio.wait_for(prompt, 10) == "cancelled"
        never.set_result("allow")  # the editor answers late: ignored
        assert await agent.say(session_id, "again") == "end_turn"

    assert not (workspace / "x.txt").exists()
    assert_valid_history(api)


# --- sessions ---------------------------------------------------------------------------------


async def test_load_a_session_after_a_restart_replays_its_history(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("remember me\n")
    api.enqueue(
        {"content": [text("Let me look."), tool_use("read_file", "toolu_r", path="notes.txt")]},
        {"content": [text("It says remember me.")]},
        {"content": [text("Still here.")]},
    )
    first = Editor()
    async with start(first) as agent:
        session_id = await agent.new()
        await agent.conn.set_session_mode(session_id=session_id, mode_id="acceptEdits")
        assert await agent.say(session_id, "what is in notes.txt?") == "end_turn"

    second = Editor()
    async with start(second) as agent:
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in listed.sessions] == [session_id]
        assert listed.sessions[0].title == "what is in notes.txt?"
        loaded = await agent.conn.load_session(
            cwd=str(workspace), session_id=session_id, mcp_servers=[]
        )
        # The whole history arrived before the answer.
        replayed = list(second.updates)
        assert loaded.modes is not None and loaded.modes.current_mode_id == "acceptEdits"
        kinds = [u.session_update for u in replayed]
        assert kinds[:2] == ["user_message_chunk", "agent_message_chunk"]
        assert replayed[0].content.text == "what is in notes.txt?"
        assert second.message_text() == "Let me look.It says remember me."
        # As it went live: allowed (a read), so in progress at once, then completed.
        assert second.statuses("toolu_r") == ["pending", "in_progress", "completed"]

        assert await agent.say(session_id, "and now?") == "end_turn"

    assert_valid_history(api)
    messages = api.message_requests()[-1].body["messages"]
    assert messages[0]["content"][0]["text"] == "what is in notes.txt?"
    assert len(messages) == 5  # prompt, read, result, answer, new prompt


# --- commands, todos, errors ------------------------------------------------------------------


async def test_slash_commands_answer_in_the_chat_and_switch_modes(start: Any) -> None:
    editor = Editor()
    async with start(editor) as agent:
        session_id = await agent.new()
        assert await agent.say(session_id, "/mode plan") == "end_turn"
        await editor.wait_for(lambda: editor.of("current_mode_update"))
        assert editor.of("current_mode_update")[0].current_mode_id == "plan"
        assert "plan" in editor.message_text()
        assert await agent.say(session_id, "/clear") == "end_turn"
        assert "from the editor" in editor.message_text()


async def test_the_model_option_switches_the_model_of_the_next_turn(
    start: Any, api: FakeMessagesAPI
) -> None:
    editor = Editor()
    async with start(editor) as agent:
        session_id = await agent.new()
        answer = await agent.conn.set_config_option(
            config_id="model", session_id=session_id, value="claude-other-2"
        )
        model = next(o for o in answer.config_options if o.id == "model")
        assert model.current_value == "claude-other-2"
        assert await agent.say(session_id, "hello") == "end_turn"
        updates = await editor.wait_for(lambda: editor.of("config_option_update"))
        assert any(
            o.id == "model" and o.current_value == "claude-other-2"
            for u in updates
            for o in u.config_options
        )
    assert api.message_requests()[-1].body["model"] == "claude-other-2"


async def test_the_todo_board_is_the_agent_plan(start: Any, api: FakeMessagesAPI) -> None:
    todos = [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
        {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
    ]
    api.enqueue(
        {"content": [tool_use("todo_write", "toolu_t", todos=todos)]},
        {"content": [text("Planned.")]},
    )
    editor = Editor()
    async with start(editor) as agent:
        session_id = await agent.new()
        assert await agent.say(session_id, "make a plan") == "end_turn"

    during, after = editor.of("plan")[0], editor.of("plan")[-1]
    assert [(e.content, e.status) for e in during.entries] == [
        ("Read the code", "completed"),
        ("Fixing the bug", "in_progress"),
        ("Run the tests", "pending"),
    ]
    # The turn is over: nobody works on the item it left in progress.
    assert [(e.content, e.status) for e in after.entries] == [
        ("Read the code", "completed"),
        ("Fix the bug", "pending"),
        ("Run the tests", "pending"),
    ]
    assert editor.call("toolu_t").kind == "think"


async def test_refusal_and_a_cut_off_answer_map_to_their_stop_reasons(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    cut_write = {
        "content": [
            text("Writing it now."),
            tool_use("write_file", "toolu_w", path="big.txt", content="x" * 400),
        ],
        "cutOff": {"block": 1, "chars": 30},
    }
    api.enqueue(
        {
            "content": [text("I can't help with")],
            "stop_reason": "refusal",
            "stop_details": {"type": "refusal", "category": "cyber", "explanation": "Not this."},
        },
        cut_write,
        cut_write,
        {"content": [text("in parts then")]},
    )
    editor = Editor()
    options = {"model": "claude-sonnet-4-5", "maxTokens": 1024, "permissionMode": "acceptEdits"}
    async with start(editor, **options) as agent:
        session_id = await agent.new()
        assert await agent.say(session_id, "a refused question") == "refusal"
        assert await agent.say(session_id, "write big.txt") == "max_tokens"
        assert await agent.say(session_id, "try in parts") == "end_turn"
    assert not (workspace / "big.txt").exists()
    assert_valid_history(api)


async def test_a_failed_turn_is_an_error_response_and_the_session_goes_on(
    start: Any, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {"error": {"status": 400, "type": "invalid_request_error", "message": "bad thing"}},
        {"content": [text("recovered")]},
    )
    editor = Editor()
    async with start(editor) as agent:
        session_id = await agent.new()
        with pytest.raises(RequestError) as failed:
            await agent.say(session_id, "go")
        assert failed.value.code == -32603
        assert "bad thing" in str(failed.value)
        assert await agent.say(session_id, "again") == "end_turn"


async def test_bad_requests_get_acp_errors(start: Any, workspace: Path) -> None:
    editor = Editor()
    async with start(editor) as agent:
        conn = agent.conn
        session_id = await agent.new()
        cases: list[tuple[Awaitable[Any], int]] = [
            (conn.prompt(session_id="ses_nope", prompt=[text_block("hi")]), -32602),
            (conn.prompt(session_id=session_id, prompt=[text_block("   ")]), -32602),
            (
                conn.prompt(
                    session_id=session_id,
                    prompt=[ImageContentBlock(type="image", data="AAAA", mime_type="image/png")],
                ),
                -32602,
            ),
            (conn.set_session_mode(session_id=session_id, mode_id="yolo"), -32602),
            (conn.set_config_option(config_id="speed", session_id=session_id, value="x"), -32602),
            (conn.new_session(cwd="relative/dir", mcp_servers=[]), -32602),
            (conn.new_session(cwd=str(workspace / "missing"), mcp_servers=[]), -32602),
            (conn.load_session(cwd=str(workspace), session_id="ses_nope", mcp_servers=[]), -32602),
            (conn.list_sessions(cursor="abc"), -32602),
            (conn.ext_method("tiller/frobnicate", {}), -32601),
        ]
        for call, code in cases:
            with pytest.raises(RequestError) as err:
                await call
            assert err.value.code == code, (str(err.value), err.value.data)
        # Nothing above disturbed the session.
        state = await conn.set_config_option(config_id="mode", session_id=session_id, value="plan")
        assert any(o.id == "mode" and o.current_value == "plan" for o in state.config_options)


async def test_a_lone_surrogate_anywhere_answers_invalid_params_naming_the_field(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    # A lone surrogate reached the agent and failed where it was encoded (SQLite): -32603.
    lone = "\ud800"
    api.enqueue({"content": [text("still here")]})
    editor = Editor()
    async with start(editor) as agent:
        conn = agent.conn
        session_id = await agent.new()
        cases: list[tuple[Awaitable[Any], str]] = [
            (
                conn.prompt(session_id=session_id, prompt=[text_block(f"hi {lone}")]),
                "params.prompt[0].text",
            ),
            (conn.prompt(session_id=lone, prompt=[text_block("hi")]), "params.sessionId"),
            (
                conn.load_session(cwd=str(workspace), session_id=lone, mcp_servers=[]),
                "params.sessionId",
            ),
            (
                conn.set_config_option(config_id="model", session_id=session_id, value=lone),
                "params.value",
            ),
            (conn.list_sessions(cwd=lone), "params.cwd"),
            (conn.new_session(cwd=str(workspace / lone), mcp_servers=[]), "params.cwd"),
        ]
        for call, field in cases:
            with pytest.raises(RequestError) as err:
                await call
            assert err.value.code == -32602, (str(err.value), err.value.data)
            assert isinstance(err.value.data, dict), err.value
            assert err.value.data["message"] == (
                f"{field} contains a lone surrogate (\\ud800); send valid Unicode"
            )
        # The session was not touched: its next prompt runs, and the model is sent none.
        assert await agent.say(session_id, "hi") == "end_turn"
        [sent] = api.message_requests()
        assert lone not in json.dumps(sent.body["messages"], ensure_ascii=False)


# --- a second, independent client -------------------------------------------------------------

# The SDK is installed here by scripts/setup-node-tests.sh (pinned in acp-ts/package-lock.json).
TS_CLIENT_DIR = Path(os.environ.get("TILLER_ACP_TS_DIR", Path(__file__).parent / "acp-ts"))


@pytest.mark.skipif(
    shutil.which("node") is None
    or not (TS_CLIENT_DIR / "node_modules" / "@agentclientprotocol" / "sdk").is_dir(),
    reason="the TypeScript ACP SDK is not installed (see docs/acp.md: second client)",
)
async def test_the_typescript_sdk_client_runs_a_turn(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    script = Path(__file__).parent / "acp_ts_client.mjs"
    api.enqueue(
        {"content": [text("Reading."), tool_use("read_file", "toolu_r", path="notes.txt")]},
        {"content": [tool_use("write_file", "toolu_w", path="out.txt", content="from ts\n")]},
        {"content": [text("Done from TypeScript.")]},
    )
    (workspace / "notes.txt").write_text("hi\n")
    env = agent_env(api, tmp_path / "data")
    env["TILLER_ACP_TS_DIR"] = str(TS_CLIENT_DIR)
    proc = await asyncio.create_subprocess_exec(
        "node",
        str(script),
        str(workspace),
        *SERVER,
        env=env,
        cwd=TS_CLIENT_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    report = out.decode()
    assert proc.returncode == 0, report
    assert "stopReason: end_turn" in report
    assert "initialized: protocol 1, agent tiller" in report
    assert "tool_call: toolu_r read pending Read notes.txt" in report
    assert "permission: toolu_w -> allow" in report
    assert (workspace / "out.txt").read_text() == "from ts\n"


async def test_a_subagent_shows_as_its_task_calls_content_and_the_prompt_ends_with_the_parent(
    start: Any, api: FakeMessagesAPI
) -> None:
    task = tool_use(
        "task", "p1", description="find it", prompt="[child] look", subagent_type="explore"
    )
    api.enqueue({"content": [task]}, {"content": [text("Found it.")]})
    api.enqueue_for(
        "[child]",
        {"content": [tool_use("bash", "c1", command="echo hi")]},
        {"content": [text("it is here")]},
    )
    editor = Editor()
    async with start(editor) as agent:
        session = await agent.new()
        assert await agent.say(session, "delegate") == "end_turn"
    # What it does first, and no colon: CodeCompanion showed "explore agent: find it" as
    # "explore agent" (it keeps what comes before a colon).
    assert editor.call("p1").title == "find it (explore agent)"
    assert "Found it." in editor.message_text()  # the parent's answer, not the child's
    assert "it is here" not in editor.message_text()
    shown = [
        shown_text(u) for u in editor.of("tool_call_update") if u.tool_call_id == "p1" and u.content
    ]
    assert any("explore › bash echo hi" in s for s in shown)  # the child's call, live
    assert editor.statuses("p1")[-1] == "completed"
    assert not [u for u in editor.of("tool_call") if u.tool_call_id == "c1"]


async def test_slash_steer_reaches_the_running_turn_at_its_next_step(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    """ACP answers each prompt with its own turn's end: ``/steer`` is answered at once."""
    answers: list[str] = []
    agent_box: list[Agent] = []

    async def steer_then_allow(
        tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> str | None:
        (agent,) = agent_box
        answers.append(await agent.say(session_box[0], "/steer use tabs, not spaces"))
        return await allow_once(tool_call, options)

    session_box: list[str] = []
    api.enqueue(
        {"content": [tool_use("bash", "toolu_s1", command="touch step")]},
        {"content": [text("tabs it is")]},
    )
    editor = Editor(choose=steer_then_allow)
    async with start(editor) as agent:
        agent_box.append(agent)
        session_box.append(await agent.new())
        assert await agent.say(session_box[0], "format it") == "end_turn"
    assert answers == ["end_turn"]
    assert "use tabs, not spaces" in str(api.message_requests()[1].body["messages"][-1])
    assert "steered: use tabs, not spaces" in editor.message_text()


# --- workspace trust --------------------------------------------------------------------------


async def test_an_untrusted_folder_is_said_its_hooks_never_run_and_trust_is_a_command(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    mark = tmp_path / "hook-ran"
    hook = {"type": "command", "command": f"touch {mark}"}
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [hook]}]}})
    )
    editor = Editor()
    async with start(editor) as agent:
        session_id = await agent.new()
        await editor.wait_for(lambda: "This folder is not trusted" in editor.message_text())
        assert ".claude/settings.json (hooks)" in editor.message_text()
        await editor.wait_for(lambda: editor.of("available_commands_update"))
        names = {c.name for c in editor.of("available_commands_update")[-1].available_commands}
        assert "trust" in names
        api.enqueue({"content": [{"type": "text", "text": "hi"}]})
        assert await agent.say(session_id, "hello") == "end_turn"
        assert not mark.exists()  # the turn ended: its hook never ran
        assert await agent.say(session_id, "/trust yes") == "end_turn"
        assert "Trusted" in editor.message_text()
        api.enqueue({"content": [{"type": "text", "text": "hi again"}]})
        assert await agent.say(session_id, "hello again") == "end_turn"
        assert mark.exists()
