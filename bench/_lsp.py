"""A minimal typed JSON-RPC client for the Tiller server over stdio (LSP framing).

The benches use this instead of ``tests/harness.py`` (pytest-lsp's LanguageClient) for two
reasons: every incoming message gets a ``time.perf_counter()`` stamp the moment its frame has
been read and parsed (so latencies are measured on the wire, without pygls' client-side
dispatch in between), and the server's PID is at hand for ``/proc`` readings. It speaks the
same protocol as the harness: same ``initialize`` params, same environment, and it answers
the server's ``tiller/*`` requests with replaceable callbacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from _common import API_KEY, FakeMessagesAPI, fake_options, scratch, stderr_tail

JSON = dict[str, Any]
Answer = Callable[[JSON], Awaitable[Any]]
T = TypeVar("T")

SERVER_COMMAND = (sys.executable, "-m", "tiller")


class RpcError(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Received:
    """One message from the server and when its frame was read (``time.perf_counter()``)."""

    at: float
    method: str
    params: JSON


async def _allow(params: JSON) -> Any:
    return {"decision": "allow"}


async def _go_on(params: JSON) -> Any:
    return {"continue": True}


async def _reject_plan(params: JSON) -> Any:
    return {"approved": False}


def server_env(data_dir: Path) -> dict[str, str]:
    """The harness's environment: no ANTHROPIC_* variables, our data dir, quiet logs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["TILLER_DATA_DIR"] = str(data_dir)
    env.setdefault("TILLER_LOG_LEVEL", "WARNING")
    return env


def _append_to(path: Path) -> BinaryIO:
    return path.open("ab")


def frame(message: JSON) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_frame(reader: asyncio.StreamReader) -> JSON | None:
    """One LSP-framed JSON message, or None at end of stream."""
    length = -1
    while True:
        line = await reader.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length < 0:
        raise RuntimeError("frame without Content-Length")
    message: JSON = json.loads(await reader.readexactly(length))
    return message


def initialize_params(workspace: Path, options: JSON) -> JSON:
    uri = workspace.resolve().as_uri()
    return {
        "processId": os.getpid(),
        "rootUri": uri,
        "workspaceFolders": [{"uri": uri, "name": "ws"}],
        "capabilities": {},
        "initializationOptions": options,
    }


@dataclass
class TillerClient:
    """One running server, what it said (time-stamped), and how the scripted user answers."""

    process: asyncio.subprocess.Process
    spawned_at: float
    notifications: list[Received] = field(default_factory=list)
    asked: list[Received] = field(default_factory=list)
    on_confirm: Answer = _allow
    on_checkpoint: Answer = _go_on
    on_plan: Answer = _reject_plan
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _pending: dict[int, asyncio.Future[tuple[float, Any]]] = field(default_factory=dict)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _reader: asyncio.Task[None] | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    # --- lifecycle ----------------------------------------------------------------------------

    @classmethod
    async def spawn(
        cls,
        data_dir: Path,
        stderr_path: Path | None = None,
        command: Sequence[str] = SERVER_COMMAND,
        extra_env: Mapping[str, str] | None = None,
    ) -> TillerClient:
        """Start ``python -m tiller`` (or ``command``; not yet initialized)."""
        stderr_file = _append_to(stderr_path) if stderr_path else None
        try:
            spawned_at = time.perf_counter()
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr_file if stderr_file else asyncio.subprocess.DEVNULL,
                env={**server_env(data_dir), **(extra_env or {})},
                limit=16 * 1024 * 1024,
            )
        finally:
            if stderr_file:
                stderr_file.close()
        client = cls(process, spawned_at)
        client._reader = asyncio.create_task(client._read_loop())
        return client

    @classmethod
    async def start(
        cls, workspace: Path, data_dir: Path, options: JSON, stderr_path: Path | None = None
    ) -> TillerClient:
        """Spawn, ``initialize`` with ``options``, then ``initialized``."""
        client = await cls.spawn(data_dir, stderr_path)
        await client.initialize(workspace, options)
        client.notify("initialized", {})
        return client

    @property
    def pid(self) -> int:
        return self.process.pid

    async def initialize(self, workspace: Path, options: JSON) -> tuple[float, JSON]:
        """Send ``initialize``; the result and when it arrived."""
        at, result = await self.request_timed("initialize", initialize_params(workspace, options))
        return at, result

    async def close(self) -> None:
        """``shutdown`` + ``exit``, then make sure the process is gone (idempotent)."""
        if self.process.returncode is not None:
            return
        with contextlib.suppress(Exception):
            await self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
        try:
            await asyncio.wait_for(self.process.wait(), 5)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        for task in list(self._tasks):
            task.cancel()

    # --- sending --------------------------------------------------------------------------

    def _write(self, message: JSON) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(frame(message))

    def notify(self, method: str, params: Any) -> None:
        message: JSON = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)

    async def request_timed(
        self, method: str, params: Any = None, timeout: float = 30.0
    ) -> tuple[float, Any]:
        """Send a request; (arrival time of the answer, result)."""
        if self._reader is not None and self._reader.done():
            raise ConnectionError("server went away")
        msg_id = next(self._ids)
        future: asyncio.Future[tuple[float, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        message: JSON = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(msg_id, None)

    async def request(self, method: str, params: Any = None, timeout: float = 30.0) -> Any:
        _, result = await self.request_timed(method, params if params is not None else {}, timeout)
        return result

    # --- receiving --------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while (message := await read_frame(stdout)) is not None:
                self._dispatch(time.perf_counter(), message)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("server went away"))
            self._signal()

    def _dispatch(self, at: float, message: JSON) -> None:
        method = message.get("method")
        msg_id = message.get("id")
        if method is None:  # a response
            future = self._pending.get(msg_id) if isinstance(msg_id, int) else None
            if future is None or future.done():
                return
            if "error" in message:
                error = message["error"]
                future.set_exception(RpcError(int(error["code"]), str(error.get("message"))))
            else:
                future.set_result((at, message.get("result")))
            return
        params = message.get("params")
        received = Received(at, str(method), params if isinstance(params, dict) else {})
        if msg_id is None:
            self.notifications.append(received)
        else:
            self.asked.append(received)
            task = asyncio.create_task(self._answer(msg_id, received))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self._signal()

    async def _answer(self, msg_id: Any, received: Received) -> None:
        handlers: dict[str, Answer] = {
            "tiller/confirmTool": self.on_confirm,
            "tiller/checkpoint": self.on_checkpoint,
            "tiller/approvePlan": self.on_plan,
        }
        handler = handlers.get(received.method)
        if handler is None:
            error = {"code": -32601, "message": f"no handler for {received.method}"}
            self._write({"jsonrpc": "2.0", "id": msg_id, "error": error})
            return
        result = await handler(received.params)
        self._write({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def _signal(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # --- waiting --------------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[], T | None], timeout: float = 20.0) -> T:
        """Wait until ``predicate()`` is truthy (re-checked on every message from the server)."""
        async with asyncio.timeout(timeout):
            while not (value := predicate()):
                if self.process.returncode is not None:
                    raise ConnectionError(f"server exited ({self.process.returncode})")
                await self._changed.wait()
            return value

    def events(self, type_: str | None = None, turn_id: str | None = None) -> list[Received]:
        """``tiller/event`` notifications, optionally of one type and one turn."""
        return [
            n
            for n in self.notifications
            if n.method == "tiller/event"
            and (type_ is None or n.params.get("type") == type_)
            and (turn_id is None or n.params.get("turnId") == turn_id)
        ]

    async def wait_event(self, type_: str, turn_id: str | None, timeout: float = 20.0) -> Received:
        def first() -> Received | None:
            found = self.events(type_, turn_id)
            return found[0] if found else None

        return await self.wait_for(first, timeout)

    async def prompt(self, text: str) -> str:
        """Start a turn; its id (the server must be idle)."""
        answer = await self.request("tiller/prompt", {"text": text})
        if not isinstance(answer, dict) or answer.get("status") != "started":
            raise RuntimeError(f"prompt not started: {answer!r}")
        return str(answer["turnId"])

    async def run(self, text: str, timeout: float = 60.0) -> Received:
        """Start a turn and wait for its ``turnEnded``."""
        return await self.wait_event("turnEnded", await self.prompt(text), timeout)


def rss_kib(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM, RssAnon, RssFile of a process, in KiB, from /proc/PID/status."""
    wanted = ("VmRSS", "VmHWM", "RssAnon", "RssFile")
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in wanted:
            values[name] = int(rest.split()[0])
    return values


def thread_count(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[tuple[int, str]]:
    """(pid, comm) of the live (non-zombie) processes whose parent is ``pid``."""
    found: list[tuple[int, str]] = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            raw = stat.read_text()
        except OSError:
            continue
        comm = raw[raw.index("(") + 1 : raw.rindex(")")]
        state, ppid = raw[raw.rindex(")") + 2 :].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.append((int(stat.parent.name), comm))
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads) so far, from /proc/PID/stat."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


R = TypeVar("R")


async def repeated_on_one_server(
    one: Callable[[TillerClient, FakeMessagesAPI, int], Awaitable[R]], repeat: int
) -> list[R]:
    """``one(client, api, n)`` for n in 0..repeat-1 on one fresh server (after a warm-up turn)
    against an in-process fake; the server's stderr tail is printed if a run fails."""
    async with scratch() as s, FakeMessagesAPI(api_key=API_KEY) as api:
        options = fake_options(api, s.data_dir)
        client = await TillerClient.start(s.workspace, s.data_dir, options, s.stderr)
        try:
            await client.run("warm up")
            return [await one(client, api, rep) for rep in range(repeat)]
        except Exception:
            print(stderr_tail(s.stderr))
            raise
        finally:
            await client.close()
