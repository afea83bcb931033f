"""One MCP server as Tiller runs it: started on first use, restarted after a crash, every call
bounded by a timeout, its stderr in Tiller's log under its name.

The ``mcp`` SDK is anyio-based: a connection (transport + ``ClientSession``) must be entered
and left in one task. So each start runs an owner task that opens the connection, hands the
session over, and holds it open until ``stop``; calls come from the turns' tasks. The SDK is
imported here only, when a server first starts (Tiller's cold start never pays for it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from tiller.extend.mcp.config import Http, ServerConfig, Stdio
from tiller.jsontypes import JSON
from tiller.workspace.supervised import supervised
from tiller.workspace.tool_env import EnvRules, tool_env

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

log = logging.getLogger(__name__)

CLIENT_NAME = "tiller"
STOP_SECONDS = 6.0  # the SDK gives a stdio server 2 s after stdin closes, 2 more after SIGTERM


@dataclass(frozen=True)
class McpSettings:
    """How servers run: the per-call and start timeouts, and the secrets tools never see."""

    call_seconds: float = 120.0
    start_seconds: float = 30.0
    env_rules: EnvRules = EnvRules()


@dataclass(frozen=True)
class ToolInfo:
    """One tool a server lists: its own name, description, input schema, and its hints."""

    server: str
    name: str
    description: str
    input_schema: JSON
    read_only_hint: bool = False  # the server's claim, shown, never a grant


@dataclass(frozen=True)
class NotStarted:
    pass


@dataclass(frozen=True)
class Running:
    tools: tuple[ToolInfo, ...]


@dataclass(frozen=True)
class Failed:
    why: str


@dataclass(frozen=True)
class Blocked:
    why: str


ServerState = NotStarted | Running | Failed | Blocked


@dataclass(frozen=True)
class CallOutcome:
    """A tools/call answered (``content``: MCP content blocks as JSON) or failed (``error``)."""

    content: tuple[JSON, ...] = ()
    is_error: bool = False
    error: str | None = None


class McpUnavailable(Exception):
    """The server could not be started (the message says why)."""


def state_text(state: ServerState) -> str:
    match state:
        case NotStarted():
            return "not started"
        case Running(tools=tools):
            return f"running, {len(tools)} tool{'s' if len(tools) != 1 else ''}"
        case Failed(why=why):
            return f"failed: {why}"
        case Blocked(why=why):
            return f"blocked: {why}"


class McpServer:
    """One configured server and its live connection, if any."""

    def __init__(self, config: ServerConfig, settings: McpSettings) -> None:
        self.config = config
        self.settings = settings
        self.state: ServerState = Blocked(config.blocked) if config.blocked else NotStarted()
        # The tools it listed when it last ran: still defined (deferred) while it is down, so a
        # definition the history loaded never changes under it (thinking stays bound).
        self.known: tuple[ToolInfo, ...] = ()
        self._session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._starting: asyncio.Future[ClientSession] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    async def tools(self) -> tuple[ToolInfo, ...]:
        """The server's tools, starting it if it is not running (McpUnavailable if it fails)."""
        await self._connected()
        match self.state:
            case Running(tools=tools):
                return tools
            case _:
                return ()

    async def call(self, tool: str, arguments: JSON) -> CallOutcome:
        """One tools/call; every failure is an outcome naming the server, never an exception
        (cancellation aside: an interrupt cancels the call at once)."""
        from mcp.shared.exceptions import MCPError

        try:
            session = await self._connected()
        except McpUnavailable as err:
            return CallOutcome(error=f"MCP server {self.name!r} is not available: {err}")
        seconds = self.config.call_seconds or self.settings.call_seconds  # the entry's own first
        try:
            async with asyncio.timeout(seconds):
                result = await session.call_tool(tool, arguments)
        except TimeoutError:
            return CallOutcome(
                error=f"MCP server {self.name!r} did not answer {tool!r} within {seconds:g} s "
                "(the mcpCallSeconds setting); the call was abandoned."
            )
        except MCPError as err:
            if not _alive(session):
                return self._crashed(tool, str(err))
            return CallOutcome(error=f"MCP server {self.name!r} refused {tool!r}: {err}")
        except Exception as err:  # a dropped connection, a malformed answer
            if not _alive(session):
                return self._crashed(tool, f"{type(err).__name__}: {err}")
            return CallOutcome(error=f"MCP server {self.name!r} failed {tool!r}: {err}")
        data = result.model_dump(mode="json", by_alias=True)
        content = tuple(c for c in data.get("content") or [] if isinstance(c, dict))
        structured = data.get("structuredContent")
        if not content and structured is not None:
            content = ({"type": "text", "text": _dump(structured)},)
        return CallOutcome(content, bool(data.get("isError")))

    def _crashed(self, tool: str, detail: str) -> CallOutcome:
        why = f"stopped during the call ({detail})"
        log.warning("MCP server %s %s", self.name, why)
        self.state = Failed(why)
        self._session = None
        return CallOutcome(
            error=f"MCP server {self.name!r} {why} of {tool!r}; it restarts on the next call."
        )

    async def _connected(self) -> ClientSession:
        """The live session: started now if needed, restarted if its connection died."""
        if isinstance(self.state, Blocked):
            raise McpUnavailable(self.state.why)
        session = self._session
        if session is not None and _alive(session):
            return session
        if self._starting is None:  # one start at a time, whoever asks
            starting = asyncio.ensure_future(self._start())
            starting.add_done_callback(self._started)
            self._starting = starting
        return await asyncio.shield(self._starting)

    def _started(self, starting: asyncio.Future[ClientSession]) -> None:
        self._starting = None
        if not starting.cancelled():
            starting.exception()  # retrieved: the callers that waited have it

    async def _start(self) -> ClientSession:
        await self.stop()
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[ClientSession] = loop.create_future()
        self._stop = asyncio.Event()
        self._owner = asyncio.ensure_future(self._own(ready, self._stop))
        seconds = self.settings.start_seconds
        try:
            session = await asyncio.wait_for(asyncio.shield(ready), seconds)
            tools = await asyncio.wait_for(_list_tools(self.name, session), seconds)
        except TimeoutError:
            await self.stop(at_once=True)
            self.state = Failed(f"did not start within {seconds:g} s (mcpStartSeconds)")
            raise McpUnavailable(self.state.why) from None
        except Exception as err:
            await self.stop(at_once=True)
            self.state = Failed(_reason(err))
            raise McpUnavailable(self.state.why) from err
        self._session = session
        self.state = Running(tools)
        self.known = tools
        log.info("MCP server %s: %s", self.name, state_text(self.state))
        return session

    async def _own(self, ready: asyncio.Future[ClientSession], stop: asyncio.Event) -> None:
        """Open the connection, hand the session over, hold it open until ``stop``."""
        from mcp.client.session import ClientSession
        from mcp.types import Implementation

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(stack))
                session = await stack.enter_async_context(
                    ClientSession(
                        read, write, client_info=Implementation(name=CLIENT_NAME, version="1")
                    )
                )
                await session.initialize()
                ready.set_result(session)
                await stop.wait()
        except BaseException as err:
            if not ready.done():
                ready.set_exception(
                    err if isinstance(err, Exception) else McpUnavailable("stopped")
                )
            if isinstance(err, asyncio.CancelledError):
                raise
            if ready.done() and not stop.is_set():
                log.warning("MCP server %s: connection ended: %s", self.name, _reason(err))

    def _transport(
        self, stack: contextlib.AsyncExitStack
    ) -> contextlib.AbstractAsyncContextManager[Any]:
        launch = self.config.launch
        match launch:
            case Stdio():
                return _stdio(self.name, launch, self.settings.env_rules, stack)
            case Http(kind="sse"):
                from mcp.client.sse import sse_client

                return sse_client(launch.url, headers=dict(launch.headers))
            case Http():
                from mcp.client.streamable_http import streamable_http_client
                from mcp.shared._httpx_utils import create_mcp_http_client

                client = create_mcp_http_client(headers=dict(launch.headers))
                stack.push_async_callback(client.aclose)
                return streamable_http_client(launch.url, http_client=client)

    async def stop(self, *, at_once: bool = False) -> None:
        """Close the connection (the SDK stops a stdio server: stdin closed, then signals);
        ``at_once``: cancel it (a server that never finished starting)."""
        owner, stop = self._owner, self._stop
        self._owner, self._stop, self._session = None, None, None
        if owner is None or stop is None:
            return
        stop.set()
        if at_once:
            owner.cancel()
        done, _ = await asyncio.wait({owner}, timeout=STOP_SECONDS)
        if not done:
            owner.cancel()
            await asyncio.wait({owner}, timeout=STOP_SECONDS)
        if owner.done() and not owner.cancelled() and owner.exception() is not None:
            log.debug("MCP server %s: %s while stopping", self.name, owner.exception())


def _stdio(
    name: str, launch: Stdio, rules: EnvRules, stack: contextlib.AsyncExitStack
) -> contextlib.AbstractAsyncContextManager[Any]:
    """The stdio transport: the tools' scrubbed environment plus only the ``env`` the config
    names; stderr goes to Tiller's log line by line under the server's name."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = tool_env(rules) | dict(launch.env)
    if shutil.which(launch.command, path=env.get("PATH")) is None:
        raise FileNotFoundError(2, "command not found", launch.command)
    # Under the tools' supervisor: the server and whatever it starts die with Tiller, even
    # after kill -9 (a server that ignores the end of its stdin included).
    command, *args = supervised([launch.command, *launch.args], os.getpid())
    params = StdioServerParameters(
        command=command,
        args=args,
        env=env,
        cwd=launch.cwd,
    )
    errlog = _stderr_to_log(name)
    stack.callback(errlog.close)  # the child keeps its own copy of the pipe
    return stdio_client(params, errlog=errlog)


def _stderr_to_log(name: str) -> TextIO:
    """A pipe whose write end the server gets as stderr; a daemon thread logs each line."""
    read_fd, write_fd = os.pipe()

    def pump() -> None:
        with os.fdopen(read_fd, "r", encoding="utf-8", errors="replace") as lines:
            for line in lines:
                log.info("MCP server %s: %s", name, line.rstrip())

    threading.Thread(target=pump, name=f"mcp-stderr-{name}", daemon=True).start()
    return os.fdopen(write_fd, "w")


async def _list_tools(server: str, session: ClientSession) -> tuple[ToolInfo, ...]:
    from mcp.types import PaginatedRequestParams

    found: list[ToolInfo] = []
    cursor: str | None = None
    while True:
        params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
        page = await session.list_tools(params=params)
        for tool in page.tools:
            data = tool.model_dump(mode="json", by_alias=True)
            annotations = data.get("annotations") or {}
            found.append(
                ToolInfo(
                    server,
                    str(data["name"]),
                    str(data.get("description") or ""),
                    data.get("inputSchema") or {"type": "object"},
                    annotations.get("readOnlyHint") is True,
                )
            )
        cursor = page.next_cursor
        if not cursor:
            return tuple(found)


def _alive(session: Any) -> bool:
    """Whether the session's connection still reads (the SDK marks its dispatcher closed when
    the server's stream ends; no public flag says so)."""
    dispatcher = getattr(session, "_dispatcher", None)
    return not getattr(dispatcher, "_closed", False)


def _reason(err: BaseException) -> str:
    if isinstance(err, BaseExceptionGroup):
        return "; ".join(_reason(e) for e in err.exceptions)
    if isinstance(err, FileNotFoundError):
        return f"command not found ({err.filename or err})"
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def _dump(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, indent=2)
