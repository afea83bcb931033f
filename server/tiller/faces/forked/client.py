"""Ask the template for a server (starting the template when there is none).

`fork_server` connects to the template's socket, checks that it is the user's own (the
folder and the socket by ``lstat``, the process by ``SO_PEERCRED``), says its version stamp
and, once the template answers ``ready``, sends its argv, environment, cwd and umask with the
three descriptors the server is to use as stdin, stdout and stderr. It returns `Forked` (the
server's pid, and the connection the template reports its exit code on), or None with the
reason logged: the warm start is off (``TILLER_WARM=0``), not possible here (not Linux, a
folder or socket that is not private), or no template is ready. The caller then spawns its
server the plain way, and once its own start is over has one started for the next client
(`start_template_if_missing`): a first start never waits for, nor competes with, the
template's warm-up.

- `serve_forked`: the server takes this process's own stdio (``tiller acp``,
  ``python -m tiller --warm``); this process waits, forwards SIGTERM/SIGINT/SIGHUP, and
  exits with the server's code.
- `run_forked`: the same for a command of the terminal client (``tiller run ...``): the fork
  runs the client itself (which then asks the template for its server), with standard
  streams made as this process's interpreter made them (`stdio_streams`), and this process
  also passes on SIGQUIT, SIGWINCH and job control (Ctrl-Z stops the fork with it).
- `start_forked`: for an asyncio client (``tiller run``, ``tiller chat``): new pipes, and a
  `ForkedProcess` that looks like the ``asyncio.subprocess.Process`` a spawn gives.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tiller.faces.forked.place import PACKAGE, Place, StreamSpec, WarmError, peer_uid, version_stamp

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger(__name__)

READY_SECONDS = 10.0  # a template (warm once its socket is there) answers ``hello`` at once
ATTEMPTS = 3  # a template that exits as we connect (idle, replaced): try again
IDLE_ENV = "TILLER_WARM_IDLE_SECONDS"
TEMPLATE_ENV = (  # what a template is started with: enough to import; never a key
    "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "PYTHONPATH", "TILLER_LOG_LEVEL",
    "SSL_CERT_FILE", "SSL_CERT_DIR",  # the certificates its TLS context reads (no secret)
)  # fmt: skip
MAX_MESSAGE = 1 << 16
_templates: list[subprocess.Popen[bytes]] = []  # started here; never waited for


def enabled(env: Mapping[str, str]) -> bool:
    return env.get("TILLER_WARM", "1") != "0" and sys.platform.startswith("linux")


@dataclass
class Forked:
    """A server the template forked: its pid, and where its exit code will come."""

    pid: int
    connection: socket.socket

    def wait(self) -> int:
        """Block until the server exits: its exit code (-N: killed by signal N). Should the
        template go first, the server is waited for by its pid (its code is then unknown)."""
        message = _receive(self.connection)
        if message is None:
            _wait_for_pid(self.pid)
        return exit_code(message)


def _wait_for_pid(pid: int) -> None:
    """Block until ``pid`` (not our child) has exited: its pidfd becomes readable."""
    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return  # gone already (or no pidfd here)
    try:
        select.select([fd], [], [])
    finally:
        os.close(fd)


def exit_code(message: dict[str, Any] | None) -> int:
    """The exit code the template reported; -SIGKILL when it said nothing (it died)."""
    code = (message or {}).get("exit")
    return code if isinstance(code, int) else -signal.SIGKILL


def fork_server(
    args: Sequence[str],
    fds: Sequence[int],
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    place: Place | None = None,
    streams: Sequence[StreamSpec] | None = None,
) -> Forked | None:
    """A server forked from the template on ``fds`` (stdin, stdout, stderr), or None. With
    ``args`` a client command (``["run", ...]``), the fork runs that command instead, its
    ``sys.stdin``/``stdout``/``stderr`` made as ``streams`` say."""
    env = dict(os.environ if env is None else env)
    if not enabled(env):
        return None
    try:
        where = place or Place.find(env)
        return _fork(where, list(args), list(fds), env, cwd or os.getcwd(), streams)
    except (OSError, WarmError, ValueError) as err:
        log.info("no warm start (%s): spawning the server", err)
        return None


def _fork(
    place: Place,
    args: list[str],
    fds: list[int],
    env: dict[str, str],
    cwd: str,
    streams: Sequence[StreamSpec] | None,
) -> Forked:
    stamp = version_stamp()
    for _ in range(ATTEMPTS):
        sock = _connect(place)
        try:
            sock.settimeout(READY_SECONDS)
            sock.send(json.dumps({"hello": stamp}).encode())
            answer = _receive(sock)
            if answer is None or answer.get("refused") == "stale":
                sock.close()  # gone (idle), or leaving now (replaced): none is ready
                continue
            if "ready" not in answer:
                raise WarmError(f"the template answered {answer!r}")
            sock.settimeout(None)  # from here it forks at once; a late fork must not happen
            umask = os.umask(0o077)
            os.umask(umask)
            request = {"fork": True, "args": args, "env": env, "cwd": cwd, "umask": umask}
            if streams is not None:
                request["streams"] = [list(spec) for spec in streams]
                request["group"] = os.getpgrp()  # the job the command's terminal reads are for
            socket.send_fds(sock, [json.dumps(request).encode()], fds)
            answer = _receive(sock)
            pid = (answer or {}).get("pid")
            if not isinstance(pid, int):
                raise WarmError(f"the template did not fork: {answer!r}")
            return Forked(pid, sock)
        except BaseException:
            sock.close()
            raise
    raise WarmError("the template kept going away")


def _receive(sock: socket.socket) -> dict[str, Any] | None:
    """One message, or None at the end of the connection."""
    try:
        data = sock.recv(MAX_MESSAGE)
    except (ConnectionResetError, BrokenPipeError):
        return None
    if not data:
        return None
    message = json.loads(data)
    if not isinstance(message, dict):
        raise WarmError(f"unexpected message {message!r}")
    return message


def _connect(place: Place) -> socket.socket:
    """A connection to a checked template of ours, or `WarmError` (none is ready)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
    try:
        sock.connect(str(place.checked_socket()))
        if peer_uid(sock) != os.getuid():
            raise WarmError("the template runs as another user")
        return sock
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        raise WarmError("no template is ready") from None
    except BaseException:
        sock.close()
        raise


def start_template_if_missing(env: Mapping[str, str], place: Place | None = None) -> bool:
    """Start a template unless one serves (or is warming up for) this installation: whether
    one was started. A client calls this once its own start is over (``tiller run`` at its
    end, the in-process server once the SDK is imported), so the template's warm-up never
    competes with the start the user is waiting for."""
    if not enabled(env):
        return False
    try:
        where = place or Place.find(dict(env))
        if template_alive(where):
            return False
        start_template(where, env)
    except (OSError, WarmError) as err:
        log.info("no warm template started: %s", err)
        return False
    return True


def template_alive(place: Place) -> bool:
    """Whether a template holds the place's lock (warming up, or serving)."""
    try:
        fd = os.open(place.lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases a lock taken here
    return False


def start_template(place: Place, env: Mapping[str, str]) -> None:
    """Start a template for ``place`` in a session of its own (its log: ``ID.log``)."""
    template_env = {name: env[name] for name in TEMPLATE_ENV if name in env}
    # the tiller this client runs, whatever the template's sys.path would find first
    paths = [str(PACKAGE.parent), *filter(None, template_env.get("PYTHONPATH", "").split(":"))]
    template_env["PYTHONPATH"] = ":".join(dict.fromkeys(paths))
    idle = env.get(IDLE_ENV)
    argv = [sys.executable, "-m", "tiller.warm.template", str(place.directory)]
    if idle:
        argv += ["--idle", idle]
    log_fd = os.open(place.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        _templates.append(
            subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log_fd,
                env=template_env,
                cwd="/",
                start_new_session=True,
            )
        )
    finally:
        os.close(log_fd)


# --- the server on this process's stdio ------------------------------------------------------


def serve_forked(args: Sequence[str]) -> int | None:
    """A forked server on this process's stdin/stdout/stderr: its exit code once it ends
    (this process waits for it), or None: serve here instead."""
    forked = fork_server(args, [0, 1, 2])
    if forked is None:
        from tiller import preload  # the server runs here: a template once the SDK is in

        preload.after(preload.SDK_MODULE, lambda: start_template_if_missing(os.environ))
        return None
    return _wait_serving(forked, (signal.SIGTERM, signal.SIGINT, signal.SIGHUP))


def run_forked(args: Sequence[str]) -> int | None:
    """The client command ``args`` (``["run", ...]``) run by a fork of the template on this
    process's stdio: its exit code once it ends, or None: run it here instead (the command
    then starts a template at its end, as a spawned client does)."""
    streams = stdio_streams()
    forked = None if streams is None else fork_server(args, [0, 1, 2], streams=streams)
    if forked is None:
        return None
    pid = forked.pid

    def stop(_sig: int, _: object) -> None:  # Ctrl-Z: the fork stops, then this process
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)

    def resume(_sig: int, _: object) -> None:  # fg/bg: both go on
        signal.signal(signal.SIGTSTP, stop)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)

    signal.signal(signal.SIGTSTP, stop)
    signal.signal(signal.SIGCONT, resume)
    forwarded = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGWINCH)
    return _wait_serving(forked, forwarded)


def stdio_streams() -> list[StreamSpec] | None:
    """How this interpreter made ``sys.stdin``/``stdout``/``stderr`` (from its environment and
    whether each is a terminal), for a fork to make its own the same: the template's were
    made for ``/dev/null`` and its own locale. None when one is missing or replaced."""
    specs: list[StreamSpec] = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        if not isinstance(stream, io.TextIOWrapper):
            return None
        errors = stream.errors or "strict"
        specs.append((stream.encoding, errors, stream.line_buffering, stream.write_through))
    return specs


def _wait_serving(forked: Forked, forwarded: Sequence[signal.Signals]) -> int:
    """Pass ``forwarded`` signals on to the fork and wait for it: its exit code (128 + N when
    a signal N ended it)."""
    # The fork has the client's pipes; without our copies the client sees its end at once.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)

    def forward(sig: int, _: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(forked.pid, sig)

    for sig in forwarded:
        signal.signal(sig, forward)
    code = forked.wait()
    return 128 - code if code < 0 else code


# --- the server on new pipes, for an asyncio client ------------------------------------------


class ForkedProcess:
    """A forked server as an asyncio client sees a spawned one (the subset it uses)."""

    def __init__(
        self,
        forked: Forked,
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
    ) -> None:
        import asyncio

        self.pid = forked.pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._exited = asyncio.ensure_future(self._read_exit(forked.connection))

    async def _read_exit(self, connection: socket.socket) -> int:
        import asyncio

        connection.setblocking(False)
        try:
            data = await asyncio.get_running_loop().sock_recv(connection, MAX_MESSAGE)
        except OSError:
            data = b""
        finally:
            connection.close()
        message = json.loads(data) if data else None
        self.returncode = exit_code(message if isinstance(message, dict) else None)
        return self.returncode

    async def wait(self) -> int:
        import asyncio

        return await asyncio.shield(self._exited)

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


async def start_forked(
    args: Sequence[str], env: Mapping[str, str], limit: int, place: Place | None = None
) -> ForkedProcess | None:
    """A server forked from the template on new pipes, or None (spawn it instead)."""
    import asyncio

    if not enabled(env):
        return None
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    theirs = [stdin_r, stdout_w, stderr_w]
    ours = [stdin_w, stdout_r, stderr_r]
    try:
        forked = await asyncio.to_thread(fork_server, args, theirs, env, None, place)
    finally:
        for fd in theirs:
            os.close(fd)
    if forked is None:
        for fd in ours:
            os.close(fd)
        return None
    loop = asyncio.get_running_loop()
    readers = []
    for fd in (stdout_r, stderr_r):
        reader = asyncio.StreamReader(limit=limit, loop=loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
        await loop.connect_read_pipe(lambda p=protocol: p, os.fdopen(fd, "rb", 0))  # type: ignore[misc]
        readers.append(reader)
    transport, writer_protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop),
        os.fdopen(stdin_w, "wb", 0),
    )
    writer = asyncio.StreamWriter(transport, writer_protocol, None, loop)
    return ForkedProcess(forked, writer, readers[0], readers[1])
