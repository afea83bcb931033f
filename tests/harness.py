"""A test/bench client for the real server over stdio (pytest-lsp's LanguageClient).

Notifications feed queues as they arrive; server->client requests are answered by
replaceable async callbacks, so a test can script the user.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from lsprotocol import types
from pygls.io_ import run_async
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import forward_stderr, register_lsp_features

from tiller.faces.common.wire import plain_dict_converter
from warm import fork_server

JSON = dict[str, Any]
Answer = Callable[[JSON], Awaitable[Any]]
Handler = Callable[[LanguageClient, JSON], Awaitable[Any]]

SERVER_COMMAND = [sys.executable, "-m", "tiller"]


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=plain_dict_converter)
    register_lsp_features(client)
    return client


def feature(client: LanguageClient, method: str) -> Callable[[Handler], Handler]:
    """pygls's ``client.feature`` decorator (unannotated there), typed."""
    register: Callable[[Handler], Handler] = client.feature(method)
    return register


async def _deny_all(params: JSON) -> Any:
    return {"decision": "deny", "feedback": "no answer scripted in this test"}


async def _reject_plan(params: JSON) -> Any:
    return {"approved": False}


async def _stop(params: JSON) -> Any:
    return {"continue": False}


async def _no_diagnostics(params: JSON) -> Any:
    return {"diagnostics": []}


@dataclass
class Tiller:
    """One running server and what it said."""

    client: LanguageClient
    workspace: Path
    events: list[JSON] = field(default_factory=list)
    states: list[JSON] = field(default_factory=list)
    todos: list[JSON] = field(default_factory=list)
    asked: list[tuple[str, JSON]] = field(default_factory=list)
    on_confirm: Answer = _deny_all
    on_plan: Answer = _reject_plan
    on_checkpoint: Answer = _stop
    on_diagnostics: Answer = _no_diagnostics  # asked only when offered (capabilities)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    def __post_init__(self) -> None:
        client = self.client

        @feature(client, "tiller/event")
        async def on_event(ls: LanguageClient, params: JSON) -> None:
            await self._add(self.events, params)

        @feature(client, "tiller/state")
        async def on_state(ls: LanguageClient, params: JSON) -> None:
            await self._add(self.states, params)

        @feature(client, "tiller/todos")
        async def on_todos(ls: LanguageClient, params: JSON) -> None:
            await self._add(self.todos, params)

        @feature(client, "tiller/confirmTool")
        async def confirm(ls: LanguageClient, params: JSON) -> Any:
            await self._add(self.asked, ("tiller/confirmTool", params))
            return await self.on_confirm(params)

        @feature(client, "tiller/approvePlan")
        async def plan(ls: LanguageClient, params: JSON) -> Any:
            await self._add(self.asked, ("tiller/approvePlan", params))
            return await self.on_plan(params)

        @feature(client, "tiller/checkpoint")
        async def checkpoint(ls: LanguageClient, params: JSON) -> Any:
            await self._add(self.asked, ("tiller/checkpoint", params))
            return await self.on_checkpoint(params)

        @feature(client, "tiller/diagnostics")
        async def diagnostics(ls: LanguageClient, params: JSON) -> Any:
            await self._add(self.asked, ("tiller/diagnostics", params))
            return await self.on_diagnostics(params)

    async def _add(self, target: list[Any], item: Any) -> None:
        async with self._changed:
            target.append(item)
            self._changed.notify_all()

    async def request(self, method: str, params: JSON | None = None) -> Any:
        protocol = self.client.protocol
        return await protocol.send_request_async(method, params or {})  # type: ignore[no-untyped-call]

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 15.0) -> Any:
        """Wait until ``predicate()`` is truthy (re-checked on every notification)."""

        async def waiting() -> Any:
            async with self._changed:
                while not (value := predicate()):
                    # Re-check on every notification, and now and then for outside changes.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._changed.wait(), 0.05)
                return value

        return await asyncio.wait_for(waiting(), timeout)

    def events_of(self, type_: str, turn_id: str | None = None) -> list[JSON]:
        return [
            e
            for e in self.events
            if e["type"] == type_ and (turn_id is None or e["turnId"] == turn_id)
        ]

    async def wait_event(
        self, type_: str, turn_id: str | None = None, timeout: float = 15.0
    ) -> JSON:
        found: JSON = await self.wait_for(
            lambda: next(iter(self.events_of(type_, turn_id)), None), timeout
        )
        return found

    async def turn_end(self, turn_id: str, timeout: float = 20.0) -> JSON:
        return await self.wait_event("turnEnded", turn_id, timeout)

    async def prompt(self, text: str) -> JSON:
        result: JSON = await self.request("tiller/prompt", {"text": text})
        return result

    async def run(self, text: str, timeout: float = 20.0) -> JSON:
        """Send a prompt and wait for its turn to end."""
        started = await self.prompt(text)
        assert started["status"] == "started", started
        return await self.turn_end(started["turnId"], timeout)

    def text_of(self, turn_id: str) -> str:
        return "".join(e["text"] for e in self.events_of("textDelta", turn_id))


def server_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["TILLER_DATA_DIR"] = str(data_dir)
    # The user's own settings files (permission rules above all) never reach a test server.
    env["CLAUDE_CONFIG_DIR"] = str(data_dir / "user-claude")
    env["TILLER_CONFIG_DIR"] = str(data_dir / "user-tiller")
    env.setdefault("TILLER_LOG_LEVEL", "WARNING")
    return env


FORK = os.environ.get("TILLER_TEST_FORK", "1") != "0"
"""Fork servers from the test process's warm template, which has imported Tiller and the SDK
(``tiller.warm``, tests/warm.py); ``TILLER_TEST_FORK=0``: spawn ``python -m tiller`` for each
(tests of start-up timing, and the benches, spawn it too)."""


async def spawn_client(command: list[str], env: dict[str, str]) -> LanguageClient:
    """A client connected over stdio to a server started as ``command``."""
    config = ClientServerConfig(server_command=command, client_factory=make_client, server_env=env)
    client = await config.start()
    assert isinstance(client, LanguageClient)  # what make_client makes
    return client


async def start_client(env: dict[str, str]) -> LanguageClient:
    """A client connected to a new server over stdio (forked, or spawned)."""
    if not FORK:
        return await spawn_client(SERVER_COMMAND, env)
    client = make_client()
    forked = await fork_server(env)
    # The product's look-alike of the process pygls and pytest-lsp expect (ForkedProcess): pid,
    # std streams, returncode, wait, send_signal, terminate, kill.
    server = cast(asyncio.subprocess.Process, forked)
    # What pygls's ``start_io`` and pytest-lsp's override do with a spawned process.
    client.protocol.set_writer(forked.stdin)
    connection = asyncio.create_task(
        run_async(
            stop_event=client._stop_event,
            reader=forked.stdout,
            protocol=client.protocol,
            error_handler=client.report_server_error,
        )
    )
    client._server = server
    exited = client._server_exit()  # type: ignore[no-untyped-call]
    client._async_tasks.extend([connection, asyncio.create_task(exited)])
    client._stderr_forwarder = asyncio.create_task(forward_stderr(server))
    return client


async def start_tiller(
    workspace: Path,
    data_dir: Path,
    options: JSON,
    capabilities: types.ClientCapabilities | None = None,
    more_folders: Sequence[Path] = (),
) -> Tiller:
    """Start the real server over stdio and initialize it with ``options`` (and the client
    ``capabilities``: none by default; ``more_folders``: workspace folders after ``workspace``,
    named after their last component)."""
    client = await start_client(server_env(data_dir))
    tiller = Tiller(client, workspace)
    folders = [types.WorkspaceFolder(workspace.as_uri(), "ws")]
    folders += [types.WorkspaceFolder(f.as_uri(), f.name) for f in more_folders]
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities or types.ClientCapabilities(),
                root_uri=workspace.as_uri(),
                workspace_folders=folders,
                initialization_options=options,
            )
        )
    except BaseException:
        server = getattr(client, "_server", None)
        if server is not None and server.returncode is None:
            server.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.stop(), 5)  # type: ignore[no-untyped-call]
        raise
    return tiller


async def stop_tiller(tiller: Tiller) -> None:
    """``shutdown`` + ``exit``; a server still there 10 s later is killed (a wedged server
    fails its test instead of hanging the suite)."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(tiller.client.shutdown_session(), 10)
    server = tiller.client._server
    if server is not None and server.returncode is None:
        try:
            await asyncio.wait_for(asyncio.shield(server.wait()), 10)
        except TimeoutError:
            server.kill()
    await tiller.client.stop()  # type: ignore[no-untyped-call]
