"""The ACP SDK on this process's stdin/stdout: ``serve_stdio`` runs the agent behind
`CheckedTransport`, after whatever `tiller.faces.acp.opening` read and answered first."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from asyncio.streams import FlowControlMixin
from typing import Any

from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES, AgentSideConnection
from acp.interfaces import Agent

from tiller.faces.acp.agent import TillerAgent
from tiller.faces.acp.opening import Opening
from tiller.faces.common.wire import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, flaw

log = logging.getLogger(__name__)


class CheckedTransport:
    """The SDK's stdio transport with the Tiller protocol's edge check in front of it.

    The SDK hands a lone surrogate (``"\\ud800"`` in JSON) to the agent like any string;
    it then fails wherever it is encoded (SQLite, the Messages API) with -32603. Here every
    message is checked once with `tiller.faces.common.wire.flaw`, like the Tiller protocol's: a
    request whose params hold a lone surrogate or a number beyond int64 is answered -32602 naming
    the field, a notification is dropped, an answer becomes an error (fail closed). (A
    number of more than 4,300 digits never gets here: the SDK's own parser drops its line.)
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def send(self, message: dict[str, Any]) -> None:
        await self.inner.send(message)

    async def close(self) -> None:
        await self.inner.close()

    async def receive(self) -> dict[str, Any] | None:
        while (message := await self.inner.receive()) is not None:
            checked = await self._checked(message)
            if checked is not None:
                return checked
        return None

    async def _checked(self, message: dict[str, Any]) -> dict[str, Any] | None:
        msg_id = message.get("id")
        problem = flaw(msg_id, "id") if isinstance(msg_id, str) else None
        if problem is not None:
            await self._answer(None, INVALID_REQUEST, problem)
            return None
        if "method" not in message:  # an answer to the agent's request
            problem = flaw(message.get("result"), "result")
            if problem is None:
                return message
            return _error(msg_id, INTERNAL_ERROR, f"unusable answer: {problem}")
        method = message["method"]
        code, problem = INVALID_REQUEST, flaw(method, "method")
        if problem is None:
            code, problem = INVALID_PARAMS, flaw(message.get("params"), "params")
        if problem is None:
            return message
        if "id" in message:
            await self._answer(msg_id, code, problem)
        else:
            log.warning("notification %r dropped: %s", method, problem)
        return None

    async def _answer(self, msg_id: Any, code: int, problem: str) -> None:
        log.warning("invalid message from the client: %s", problem)
        await self.inner.send(_error(msg_id, code, problem))


_LABELS = {
    INVALID_REQUEST: "Invalid request",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
}


def _error(msg_id: Any, code: int, problem: str) -> dict[str, Any]:
    """An error answer shaped like the SDK's own (``data.message``: what is wrong)."""
    error = {"code": code, "message": f"{_LABELS[code]}: {problem}", "data": {"message": problem}}
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def serve_stdio(opening: Opening) -> None:
    """Serve until the client closes stdin (or SIGTERM)."""
    asyncio.run(_serve(opening))


async def _stdio_streams(unread: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """``acp.stdio.stdio_streams`` (POSIX), with ``unread`` (read off stdin before the SDK
    was loaded) first in line: fed before the pipe is, so nothing can pass it."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES, loop=loop)
    reader.feed_data(unread)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(FlowControlMixin, sys.stdout)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def _run_agent(agent: Agent, unread: bytes) -> None:
    """``acp.run_agent(agent)`` with `CheckedTransport` in front of the SDK's transport."""
    reader, writer = await _stdio_streams(unread)
    conn = AgentSideConnection(agent, writer, reader, listening=False)
    # The one place the SDK's internals are used: its connection reads raw messages from
    # ``_conn._transport`` (agent-client-protocol 0.12); tests/e2e/test_acp.py fails if moved.
    inner = conn._conn._transport
    conn._conn._transport = CheckedTransport(inner)
    try:
        await conn.listen()
    finally:
        await asyncio.shield(conn.close())


async def _serve(opening: Opening) -> None:
    agent = TillerAgent()
    loop = asyncio.get_running_loop()
    stopping: set[asyncio.Task[None]] = set()

    async def terminate() -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(agent.shutdown(), 5)
        logging.shutdown()
        os._exit(128 + signal.SIGTERM)

    loop.add_signal_handler(signal.SIGTERM, lambda: stopping.add(loop.create_task(terminate())))
    if opening.initialize is not None:
        await agent.initialize_answered(opening.initialize)
    try:
        await _run_agent(agent, opening.unread)
    finally:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(agent.shutdown(), 5)
