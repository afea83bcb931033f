"""The template: ``python -m tiller.warm.template DIR [--idle SECONDS]``.

Started by a client that found none, once that client's own start is over (``client.py``),
in a session of its own, with a short allow-listed environment (no key). In order:

1. It takes ``ID.lock`` (``flock``) and holds it for its life: a second template of the same
   installation exits at once, and a client that finds the lock held starts none.
2. It makes itself non-dumpable, imports the servers (both protocols) and the SDK, builds the
   wire's converter, warms the read-only classifier and probes the sandbox, all on its one
   thread: it never starts a thread, so every fork copies a process in which no other thread
   held a lock (checked before each fork: with another thread alive it refuses, leaves, and
   its clients spawn). Clients that come meanwhile find no socket and spawn their server:
   a first start is never slower for the template's warm-up.
3. It removes a stale socket, binds ``ID.sock`` (mode 0600, in the 0700 folder) and serves.
   Per connection: the peer's uid (``SO_PEERCRED``) must be its own, else the connection is
   closed. The client says its stamp (``hello``); a different stamp is a newer (or older)
   install: the template answers ``stale``, unlinks its socket, releases the lock and exits
   once its servers have ended, and the client starts a new one. Else it answers
   ``ready``; the client sends its ``fork`` request (argv, environment, cwd, umask) with its
   stdin, stdout and stderr attached. The template forks; the child becomes the server
   (`become_server`), or runs the client command the request names (``tiller run ...``, with
   its standard streams made as the client's were: ``tiller.faces.cli``), and the template
   answers its pid, later its exit code. A client whose connection ends while its server
   runs has gone away: the server gets SIGTERM.
4. It exits after ``--idle`` seconds with no server and no client.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import errno
import fcntl
import gc
import io
import json
import logging
import os
import selectors
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiller.faces.forked.place import (
    Place,
    StreamSpec,
    WarmError,
    checked_dir,
    peer_uid,
    version_stamp,
)

log = logging.getLogger("tiller.warm.template")

PRELOAD = (
    "tiller.faces.serve",
    "tiller.faces.lsp.rpc",
    "tiller.faces.lsp.pygls_adapter",
    "tiller.model.anthropic_provider",
    "tiller.faces.acp",
    "tiller.faces.acp.agent",
    "acp.core",
    "tiller.faces.acp.stdio",
    "tiller.faces.command_line",  # ``tiller run``, run by a fork (``ForkRequest.streams``)
    "tiller.faces.client.headless",
)
HTTP_REQUEST_MODULES = ("anyio._backends._asyncio", "anyio._core._sockets", "anyio.streams.stapled")
MAX_MESSAGE = 1 << 20
DEFAULT_IDLE_SECONDS = 900.0
STD_FDS = 3  # stdin, stdout, stderr
PROPAGATORS = "OTEL_PROPAGATORS"  # read by opentelemetry.propagate when it is imported


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.send(data)


@dataclass
class Client:
    """One connection: its stage, and the server forked for it."""

    sock: socket.socket
    greeted: bool = False
    server: int | None = None


@dataclass
class Template:
    place: Place
    listener: socket.socket
    lock_fd: int
    stamp: str
    idle_seconds: float
    bwrap: str | None  # the sandbox probe's, kept by a server whose PATH finds the same
    socket_inode: int = 0  # the socket file it bound (a newer template's is left alone)
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)
    clients: dict[int, Client] = field(default_factory=dict)  # by socket fd
    servers: dict[int, Client] = field(default_factory=dict)  # by server pid
    retired: bool = False
    last_busy: float = field(default_factory=time.monotonic)

    def serve(self) -> None:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        os.set_blocking(wake_r, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.wake = (wake_r, wake_w)
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(wake_r, selectors.EVENT_READ, "wake")
        while not self._done():
            for key, _ in self.selector.select(self._timeout()):
                match key.data:
                    case "accept":
                        self._accept()
                    case "wake":
                        with contextlib.suppress(BlockingIOError):
                            os.read(wake_r, 4096)
                    case Client() as client:
                        self._read(client)
            self._reap()
        log.info("the template exits (%s)", "replaced" if self.retired else "idle")

    def _timeout(self) -> float:
        return max(0.0, self.last_busy + self.idle_seconds - time.monotonic())

    def _done(self) -> bool:
        if self.servers or self.clients:
            self.last_busy = time.monotonic()
            return False
        return self.retired or self._timeout() <= 0

    def _accept(self) -> None:
        if self.retired:
            return
        try:
            sock, _ = self.listener.accept()
        except OSError:
            return
        if peer_uid(sock) != os.getuid():  # another user: never served
            log.warning("refused a connection from uid %d", peer_uid(sock))
            sock.close()
            return
        client = Client(sock)
        self.clients[sock.fileno()] = client
        self.selector.register(sock, selectors.EVENT_READ, client)

    def _read(self, client: Client) -> None:
        try:
            data, fds, _, _ = socket.recv_fds(client.sock, MAX_MESSAGE, STD_FDS)
        except OSError:
            data, fds = b"", []
        if not data:
            self._gone(client)
            return
        try:
            message = json.loads(data)
            if not client.greeted:
                self._hello(client, message)
            elif client.server is None and len(fds) == STD_FDS:
                self._fork(client, ForkRequest.parse(message), fds)
            else:
                raise WarmError("unexpected message")
        except (ValueError, WarmError, OSError) as err:
            log.warning("bad request: %s", err)
            with contextlib.suppress(OSError):
                send(client.sock, {"refused": str(err)})
            self._gone(client)
        finally:
            for fd in fds:  # the server has its copies
                os.close(fd)

    def _hello(self, client: Client, message: dict[str, Any]) -> None:
        if message.get("hello") != self.stamp:
            send(client.sock, {"refused": "stale"})
            self._retire()
            self._gone(client)
            return
        client.greeted = True
        send(client.sock, {"ready": os.getpid()})

    def _retire(self) -> None:
        """A newer install wants the place: leave it (socket, lock) and end with the servers."""
        if not self.retired:
            self.retired = True
            self.selector.unregister(self.listener)
            self.leave()

    def leave(self) -> None:
        """Unlink the socket (while it is still ours), close it, release the lock."""
        if self.listener.fileno() < 0:
            return
        with contextlib.suppress(OSError):
            if os.stat(self.place.socket).st_ino == self.socket_inode:
                os.unlink(self.place.socket)
        self.listener.close()
        os.close(self.lock_fd)

    def _fork(self, client: Client, request: ForkRequest, fds: list[int]) -> None:
        if threading.active_count() != 1:  # a fork must copy a single-threaded process
            self._retire()
            raise WarmError("the template has threads: it will not fork")
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self._drop_in_child()
            become_server(request, fds, self.bwrap)  # never returns
        client.server = pid
        self.servers[pid] = client
        send(client.sock, {"pid": pid})

    def _drop_in_child(self) -> None:
        """What the server must not keep: every descriptor of the template's own."""
        signal.set_wakeup_fd(-1)
        for fd in self.wake:
            os.close(fd)
        self.selector.close()
        for other in self.clients.values():
            os.close(other.sock.detach())
        if not self.retired:
            os.close(self.listener.detach())
            os.close(self.lock_fd)

    def _gone(self, client: Client) -> None:
        fd = client.sock.fileno()
        if fd >= 0:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(client.sock)
            self.clients.pop(fd, None)
            client.sock.close()
        if client.server is not None and client.server in self.servers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(client.server, signal.SIGTERM)  # its client went away

    def _reap(self) -> None:
        while self.servers:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            client = self.servers.pop(pid, None)
            if client is None or client.sock.fileno() < 0:
                continue
            with contextlib.suppress(OSError):
                send(client.sock, {"exit": os.waitstatus_to_exitcode(status)})
            client.server = None
            self._gone(client)


@dataclass(frozen=True)
class ForkRequest:
    """What the fork takes from its client: argv, environment, working dir, umask, and for a
    client command (``args`` ``["run", ...]``: ``tiller run``) how its standard streams are
    made. ``args`` ``[]`` or ``["--acp"]`` is a server."""

    args: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    umask: int
    streams: tuple[StreamSpec, ...] = ()
    group: int | None = None  # a client command's process group (its shell's job)

    @classmethod
    def parse(cls, message: Any) -> ForkRequest:
        if not isinstance(message, dict) or message.get("fork") is not True:
            raise WarmError("expected a fork request")
        args, env = message.get("args"), message.get("env")
        cwd, umask = message.get("cwd"), message.get("umask")
        match args:
            case [] | ["--acp"]:  # a server (never --warm: a fork forks nothing)
                command = False
            case ["run", *rest] if all(isinstance(arg, str) for arg in rest):
                command = True
            case _:
                raise WarmError(f"args: expected [], ['--acp'] or ['run', ...], got {args!r}")
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise WarmError("env: expected an object of strings")
        if not isinstance(cwd, str) or not isinstance(umask, int):
            raise WarmError("cwd and umask: expected a string and a number")
        streams = _streams(message.get("streams")) if command else ()
        group = message.get("group") if command else None
        if group is not None and (not isinstance(group, int) or group <= 0):
            raise WarmError(f"group: expected a process group id, got {group!r}")
        return cls(tuple(str(arg) for arg in args), env, cwd, umask, streams, group)


def _streams(value: object) -> tuple[StreamSpec, ...]:
    def spec(item: object) -> StreamSpec:
        match item:
            case [str(encoding), str(errors), bool(lines), bool(through)]:
                codecs.lookup(encoding)  # LookupError: no such codec
                codecs.lookup_error(errors)  # LookupError: no such error handler
                return (encoding, errors, lines, through)
        raise WarmError(f"streams: expected [encoding, errors, bool, bool], got {item!r}")

    if not isinstance(value, list) or len(value) != STD_FDS:
        raise WarmError("streams: expected three (stdin, stdout, stderr)")
    try:
        return tuple(spec(item) for item in value)
    except LookupError as err:
        raise WarmError(f"streams: {err}") from err


def _standard_streams(specs: tuple[StreamSpec, ...]) -> None:
    """``sys.stdin``/``stdout``/``stderr`` on descriptors 0-2, made as the client's interpreter
    made its own (the template's were made for ``/dev/null``, in its own locale)."""
    made = []
    for fd, (encoding, errors, lines, through) in enumerate(specs):
        mode = "rb" if fd == 0 else "wb"
        raw = open(fd, mode, closefd=False)  # noqa: SIM115 (the process's own, never closed)
        stream = io.TextIOWrapper(raw, encoding, errors, "\n", lines, through)
        made.append(stream)
    sys.stdin, sys.stdout, sys.stderr = made


def become_server(request: ForkRequest, fds: list[int], bwrap: str | None) -> None:
    """In the fork: take the client's stdio, environment, cwd and umask; run the server, or
    the client command the request names."""
    code = 1
    try:
        os.setsid()  # its own session, as a spawned server: the client's Ctrl-C is the client's
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        template_propagators = os.environ.get(PROPAGATORS)
        os.environ.clear()  # the client's environment, key included; none of the template's
        os.environ.update(request.env)
        propagators_as_the_client_names(template_propagators)
        os.chdir(request.cwd)
        os.umask(request.umask)
        sys.argv = ["tiller", *request.args]
        logging.getLogger().handlers.clear()  # the template's; each main() makes its own
        if request.streams:
            _standard_streams(request.streams)
            if request.group is not None:
                from tiller.faces.client.terminal import read_for_job

                read_for_job(request.group)
            from tiller.faces.command_line import main as command

            command(request.args)
        else:
            from tiller.workspace.sandbox import keep_probe_if_same

            keep_probe_if_same(bwrap)  # the template's probe, where it holds for this PATH
            from tiller.faces.serve import main

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
            import atexit

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


def warm_up() -> str | None:
    """Import both servers and the SDK, build the wire's converter (its types resolved once)
    and what the SDK parses a model listing into, warm the classifier, probe the sandbox: on
    this thread only. The ``bwrap`` probed."""
    import importlib

    from tiller import preload

    with preload.full_collections_paused():
        for name in PRELOAD:
            importlib.import_module(name)
    from tiller.faces.common.wire import plain_dict_converter, warm_handshake
    from tiller.faces.lsp.params import warm_params
    from tiller.faces.lsp.rpc import HANDLERS
    from tiller.warm.models_listing import warm_models_listing
    from tiller.workspace.bash.readonly import is_read_only_command
    from tiller.workspace.sandbox import probed_bwrap
    from tiller.workspace.tool_env import tool_env

    warm_handshake(plain_dict_converter())
    warm_params(params for params, _handler in HANDLERS.values())
    warm_http()
    warm_models_listing()
    tool_env()  # compiles the secret-name patterns once
    is_read_only_command("true", Path("/"))
    bwrap = probed_bwrap()
    gc.collect()
    gc.freeze()  # what the template loaded stays shared with its forks, never copied by a pass
    return bwrap


def warm_http() -> None:
    """Import what the SDK imports for its first client and its first request (httpcore2, h11,
    truststore, anyio's asyncio backend), and make the TLS context (``sdk_adapter.tls_context``):
    ~0.1 s that every fork paid before its first model request. The client made for it never
    sends anything and is dropped. And the trace propagators the first request loads (~8 ms
    a fork paid), as the template's environment names them (``propagators_as_the_client_names``
    makes a fork's own when its client names others)."""
    import importlib

    import anthropic
    from anthropic._tracing import trace_context_injector

    from tiller.model.sdk_adapter import client_timeout, http_client

    timeout = client_timeout(5)  # and the TLS context every fork's client shares
    anthropic.AsyncAnthropic(
        api_key="t", base_url="http://127.0.0.1:9", http_client=http_client(timeout)
    )
    for name in HTTP_REQUEST_MODULES:
        importlib.import_module(name)
    trace_context_injector()


def propagators_as_the_client_names(template_names: str | None) -> None:
    """In a fork, once its client's environment is in place: ``opentelemetry.propagate`` made
    its propagators from ``OTEL_PROPAGATORS`` when the template imported it (``warm_http``). A
    client that names others gets them made from its own at its first request, as a spawned
    server would: the module is imported again and the SDK asks it again."""
    if os.environ.get(PROPAGATORS) != template_names:
        forget_propagators()


def forget_propagators() -> None:
    """The next model request imports ``opentelemetry.propagate`` again, from the environment
    it then has."""
    from anthropic._tracing import trace_context_injector

    sys.modules.pop("opentelemetry.propagate", None)
    trace_context_injector.cache_clear()  # type: ignore[attr-defined]  # the SDK's lru_cache, typed as the function


def _lock(place: Place) -> int:
    """The place's lock (held for the template's life), or `WarmError`: another holds it."""
    lock_fd = os.open(place.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        os.close(lock_fd)
        if err.errno in (errno.EAGAIN, errno.EACCES):
            raise WarmError("another template serves this place") from err
        raise
    return lock_fd


def _listen(place: Place) -> socket.socket:
    """The socket, bound (mode 0600) once the template is warm: a client that finds it is
    served at once; one that does not spawns its server (and starts no second template)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(place.socket)  # a dead template's: the lock says nobody serves it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
    old = os.umask(0o177)
    try:
        listener.bind(str(place.socket))
    finally:
        os.umask(old)
    listener.listen(64)
    return listener


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tiller.warm.template")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--idle", type=float, default=DEFAULT_IDLE_SECONDS)
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("TILLER_LOG_LEVEL", "WARNING").upper(),
        format="%(asctime)s %(levelname)s template %(process)d: %(message)s",
    )
    from tiller import allocator
    from tiller.hardening import make_undumpable

    make_undumpable()
    allocator.tune()  # the forks inherit it (allocator.py: issue 36)
    try:
        place = Place(checked_dir(args.directory, args.directory.lstat()))
        lock_fd = _lock(place)
    except (OSError, WarmError) as err:
        log.info("not serving: %s", err)
        return
    stamp = version_stamp()
    bwrap = warm_up()
    listener = _listen(place)
    inode = os.stat(place.socket).st_ino
    template = Template(place, listener, lock_fd, stamp, args.idle, bwrap, inode)
    try:
        template.serve()
    finally:
        template.leave()


if __name__ == "__main__":
    main()
