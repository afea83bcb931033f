"""Start test servers by forking a process that has already imported Tiller and the SDK.

Every end-to-end test starts a real server; ``python -m tiller`` spends ~1.2 s of CPU
importing pygls and the ``anthropic`` SDK before it answers anything, which on a 2-core
machine was most of the suite's time. Here one *template* process per test process
(``python tests/forkserver.py CONTROL_FD``, started on first use) imports them once; each
server is a fork of it that then runs ``tiller.__main__.main()`` exactly as
``python -m tiller`` would: its own pid, the test's pipes as stdin/stdout/stderr, the test's
environment and working directory, ``sys.exit`` codes as the exit status, ``atexit`` run.
Killing it (``SIGKILL``) kills the server itself, as with a spawned one.

What a forked server does not exercise is the import itself: tests of start-up timing, and
the benches, spawn ``python -m tiller`` (``SERVER_COMMAND``). ``TILLER_TEST_FORK=0`` makes
the harness spawn every server that way.

`ForkedServer` is what the test side holds: the subset of ``asyncio.subprocess.Process``
that pygls and pytest-lsp use (pid, stdin/stdout/stderr streams, returncode, wait, kill,
terminate, send_signal). The exit status comes through a pipe per server that the template
writes to when it reaps the child, so it is read on whatever event loop the test runs.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from typing import Any

PRELOAD = (
    "tiller.__main__",
    "tiller.faces.lsp.rpc",
    "tiller.faces.lsp.pygls_adapter",
    "tiller.model.anthropic_provider",
)
MAX_REQUEST = 1 << 20


# --- the template process ----------------------------------------------------------------------


def _serve_template(control: socket.socket) -> None:
    """Fork a server per request; report each one's exit status on its status pipe."""
    import gc
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()  # what the template loaded stays shared, never copied by a collection
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    status_fds: dict[int, int] = {}  # child pid -> the write end of its status pipe
    control.send(b"ready")
    while True:
        readable, _, _ = select.select([control.fileno(), wake_r], [], [])
        if wake_r in readable:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
            _reap(status_fds)
        if control.fileno() in readable:
            message, fds, _, _ = socket.recv_fds(control, MAX_REQUEST, 4)
            if not message:  # the test process is gone
                return
            request = json.loads(message)
            pid = os.fork()
            if pid == 0:
                control.close()
                for fd in (wake_r, wake_w, *status_fds.values()):  # the siblings' status pipes
                    os.close(fd)
                _become_server(request, fds)  # never returns
            for fd in fds[:3]:
                os.close(fd)
            status_fds[pid] = fds[3]
            control.send(f"{request['nonce']} {pid}".encode())
            _reap(status_fds)


def _reap(status_fds: dict[int, int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = status_fds.pop(pid, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.write(fd, f"{os.waitstatus_to_exitcode(status)}\n".encode())
            os.close(fd)


def _become_server(request: dict[str, Any], fds: list[int]) -> None:
    """In the fork: take the test's pipes, environment and cwd, and run the server."""
    code: int = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.close(fds[3])
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = ["tiller", *request["args"]]
        from tiller.__main__ import main

        main()
        code = 0
    except SystemExit as done:
        code = _exit_code(done.code)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:  # what the interpreter does on its way out: join threads, run atexit, flush
            threading._shutdown()  # type: ignore[attr-defined]
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


# --- the test side -------------------------------------------------------------------------------


class ServerTemplate:
    """The template process of this test process (started on first use, shared by tests)."""

    _lock = threading.Lock()
    _current: ServerTemplate | None = None
    _nonces = itertools.count(1)

    def __init__(self) -> None:
        # SEQPACKET: one request, one answer, never split or merged
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen(
            [sys.executable, __file__, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self.control = ours
        if ours.recv(64) != b"ready":
            raise RuntimeError("the server template did not start")
        atexit.register(self.close)

    def close(self) -> None:
        """End the template (end of its control socket); the servers it forked go on."""
        self.control.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)

    @classmethod
    def shared(cls) -> ServerTemplate:
        with cls._lock:
            if cls._current is None or cls._current.process.poll() is not None:
                cls._current = cls()
            return cls._current

    def fork(self, args: list[str], env: dict[str, str], cwd: str, fds: list[int]) -> int:
        """A new server on ``fds`` (stdin, stdout, stderr, status); its pid."""
        nonce = next(self._nonces)
        request = json.dumps({"args": args, "env": env, "cwd": cwd, "nonce": nonce}).encode()
        with self._lock:
            socket.send_fds(self.control, [request], fds)
            while True:  # an answer to a request whose waiter was interrupted comes first
                answer = self.control.recv(64).split()
                if len(answer) != 2:
                    raise RuntimeError(f"the server template failed to fork: {answer!r}")
                if answer[0] == str(nonce).encode():
                    return int(answer[1])


class ForkedServer:
    """A forked server, as pygls and pytest-lsp see a server process."""

    def __init__(
        self,
        pid: int,
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
        status: asyncio.StreamReader,
    ) -> None:
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._exited = asyncio.ensure_future(self._read_status(status))

    async def _read_status(self, status: asyncio.StreamReader) -> int:
        line = await status.readline()
        self.returncode = int(line) if line.strip() else -signal.SIGKILL
        return self.returncode

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


async def _read_end(fd: int) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    await loop.connect_read_pipe(lambda: protocol, os.fdopen(fd, "rb", 0))
    return reader


async def fork_server(env: dict[str, str], cwd: str | None = None) -> ForkedServer:
    """A new server forked from this process's template (started now if need be)."""
    loop = asyncio.get_running_loop()
    template = await asyncio.to_thread(ServerTemplate.shared)
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    status_r, status_w = os.pipe()
    theirs = [stdin_r, stdout_w, stderr_w, status_w]
    try:
        pid = template.fork([], env, cwd or os.getcwd(), theirs)
    finally:
        for fd in theirs:
            os.close(fd)
    readers = [await _read_end(fd) for fd in (stdout_r, stderr_r, status_r)]
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop),
        os.fdopen(stdin_w, "wb", 0),
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return ForkedServer(pid, writer, readers[0], readers[1], readers[2])


if __name__ == "__main__":
    _serve_template(socket.socket(fileno=int(sys.argv[1])))
