"""The server as a child process: start it, initialize, talk, shut it down (or kill it).

It is forked from the warm template when it can be (``tiller.warm``: no import to wait
for), else spawned (``python -m tiller``). Either way it runs in its own session: Ctrl-C on
the terminal reaches the client only, and the client decides what it means (interrupt,
clear the line, quit).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from tiller import __version__
from tiller.faces.client.jsonrpc import Handlers, JsonRpcConnection, RpcError
from tiller.faces.forked.client import ForkedProcess, start_forked, start_template_if_missing
from tiller.jsontypes import JSON

SHUTDOWN_SECONDS = 5.0
QUIT_GRACE_SECONDS = 1.0
STREAM_LIMIT = 1 << 24  # one JSON-RPC header line is short, but be generous with stderr lines


def server_command() -> list[str]:
    return [sys.executable, "-m", "tiller"]


class Process(Protocol):
    """A spawned server (``asyncio.subprocess.Process``) or a forked one (``ForkedProcess``)."""

    @property
    def pid(self) -> int: ...
    @property
    def stdin(self) -> asyncio.StreamWriter | None: ...
    @property
    def stdout(self) -> asyncio.StreamReader | None: ...
    @property
    def stderr(self) -> asyncio.StreamReader | None: ...
    @property
    def returncode(self) -> int | None: ...
    async def wait(self) -> int: ...
    def kill(self) -> None: ...


class ServerProcess:
    """One running server and its JSON-RPC connection."""

    def __init__(
        self,
        process: Process,
        handlers: Handlers,
        on_stderr: Callable[[str], None],
        env: Mapping[str, str] | None = None,
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.env = env  # what it was started with
        self.rpc = JsonRpcConnection(process.stdout, process.stdin, handlers)
        self._tasks = [
            asyncio.create_task(self.rpc.serve()),
            asyncio.create_task(_forward_lines(process.stderr, on_stderr)),
        ]

    @classmethod
    async def start(
        cls,
        handlers: Handlers,
        on_stderr: Callable[[str], None],
        env: Mapping[str, str] | None = None,
    ) -> ServerProcess:
        """A server forked from the warm template (``tiller.warm``), else spawned."""
        env = dict(os.environ if env is None else env)
        process: Process | None = await start_forked([], env, STREAM_LIMIT)
        if process is None:
            process = await asyncio.create_subprocess_exec(
                *server_command(),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                start_new_session=True,
                limit=STREAM_LIMIT,
            )
        return cls(process, handlers, on_stderr, env)

    @property
    def gone(self) -> asyncio.Event:
        """Set when the connection ends (the server exited or closed its stdout)."""
        return self.rpc.closed

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def request(self, method: str, params: Any = None) -> Any:
        return await self.rpc.request(method, params)

    async def initialize(self, folders: Sequence[Path], options: JSON, client_name: str) -> JSON:
        """``initialize`` + ``initialized`` with the workspace folders (the primary one first);
        ``RpcError`` when the server refuses the options."""
        result = await self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "clientInfo": {"name": client_name, "version": __version__},
                "rootUri": folders[0].as_uri(),
                "workspaceFolders": [{"uri": f.as_uri(), "name": f.name} for f in folders],
                "capabilities": {},
                "initializationOptions": options,
            },
        )
        self.rpc.notify("initialized", {})
        return result if isinstance(result, dict) else {}

    def kill(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()

    async def wait_exit(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self.process.wait(), seconds)
        except TimeoutError:
            self.kill()
            await self.process.wait()

    async def shutdown(self) -> None:
        """``shutdown`` + ``exit``, then wait for the process; kill it if it does not go."""
        if self.process.returncode is None and not self.gone.is_set():
            try:
                await asyncio.wait_for(self.request("shutdown"), SHUTDOWN_SECONDS)
                self.rpc.notify("exit")
            except (TimeoutError, RpcError, ConnectionError):
                self.kill()
        await self.wait_exit(SHUTDOWN_SECONDS)
        await self._drain()
        self._warm_the_next()

    def _warm_the_next(self) -> None:
        """A spawned server's client is done: a warm template for the next one (started now,
        so that its warm-up never competed with this start)."""
        if self.env is not None and not isinstance(self.process, ForkedProcess):
            start_template_if_missing(self.env)

    async def abandon(self) -> None:
        """Quit now: end of input tells the server to cancel its work (stopping running
        commands) and exit; whatever is still there a moment later is killed."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError, RuntimeError):
                self.process.stdin.close()
        await self.wait_exit(QUIT_GRACE_SECONDS)
        await self._drain()
        self._warm_the_next()

    async def _drain(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*self._tasks), SHUTDOWN_SECONDS)


async def _forward_lines(
    stream: asyncio.StreamReader | None, on_line: Callable[[str], None]
) -> None:
    """The server's log (its stderr) line by line; an undrained pipe would stall it."""
    if stream is None:
        return
    with contextlib.suppress(ConnectionError, ValueError):
        while line := await stream.readline():
            on_line(line.decode(errors="replace"))
