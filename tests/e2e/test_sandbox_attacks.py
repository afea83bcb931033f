"""Attacks on the sandbox and on the server's API key, end to end: the scripted model calls
``bash``, the real server (with the key in its environment, as an editor starts it) runs the
command, and the kernel says no. Every test runs as root and as an unprivileged user
(``users.py``). The server is the one an editor gets: forked from a warm template
(``tiller.warm``), the key in the environment the client hands over. As root the template is
the test process's own (``tests/warm.py``), which the harness asks directly; as the
unprivileged user it is a template of that user's, started for this module in a runtime dir
of the user's own (a template forks servers for its own user only), and each server is asked
for by ``python -m tiller --warm`` run as that user, the extension's command. The one test
that reads what ``exec`` wrote (root reading a server's ``/proc/<pid>/environ``) spawns
``python -m tiller`` (the fallback when there is no template) for both users, the key in its
environment at ``exec``: a forked server's block is the template's, which never held a key.

- A hostile program in the sandbox (a repository's program that a read-only command runs) as
  root: bwrap started by uid 0 kept every capability, so ``mount``, remounting the read-only
  binds writable, ``unshare -rm`` and the host's sysctls (``kernel.core_pattern``) worked. Here
  the program is an approved command under ``sandbox: "always"``: the same sandbox (its
  workspace writable), reached without depending on what the classifier lets through
  (tests/unit/test_sandbox.py runs the read-only variant directly).
- An approved command that walks up from ``$PPID`` to the server and reads
  ``/proc/<server>/environ`` or ``/proc/<server>/mem``, or looks for it with ``ps``: with
  bubblewrap it runs in a PID namespace of its own, where the server does not exist. With
  ``sandbox: "off"`` the server is non-dumpable (a normal user cannot read its environment or
  memory) and has blanked the key in its own environment (root can read that, and finds no
  key; root reading the server's memory is not stopped: docs/security.md).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types

from fakeapi import FakeMessagesAPI
from harness import FORK, Tiller, server_env, spawn_client, start_client, stop_tiller
from processes import children, until
from test_scheduling_and_permissions import results_of
from test_turn_basics import text, tool_use
from tiller.faces.forked.client import TEMPLATE_ENV
from tiller.workspace.sandbox import bwrap_works
from users import USERS, User, as_user, make_dir, python_for, require, user_dir

SECRET = "sk-ant-attack-5e6f7a8b9c0d1e2f"

# One worker runs the module (scripts/test.sh: --dist loadgroup): the unprivileged user's
# template (``user_template``) is started once, not once per worker.
pytestmark = pytest.mark.xdist_group("sandbox_attacks")

needs_bwrap = pytest.mark.skipif(not bwrap_works(), reason="bubblewrap does not work here")


@dataclass(frozen=True)
class Place:
    user: User
    ws: Path
    data: Path
    home: Path


@pytest.fixture(params=USERS)
def place(request: pytest.FixtureRequest) -> Iterator[Place]:
    user: User = request.param
    require(user)
    with user_dir(user, "tiller-attack-") as base:
        yield Place(
            user,
            make_dir(base / "ws", user),
            make_dir(base / "data", user),
            make_dir(base / "home", user),
        )


@dataclass(frozen=True)
class UserTemplate:
    """A warm template running as the unprivileged user, in a runtime dir of its own."""

    runtime: Path
    process: subprocess.Popen[bytes]

    async def ready(self) -> None:
        """Until its socket is bound (a client that came earlier would spawn). Its name is
        the user's interpreter's (``installation_id``), not this process's: any socket."""
        folder = self.runtime / "tiller"
        await until(lambda: any(folder.glob("*.sock")) or self.process.poll() is not None, 60)
        assert self.process.poll() is None, "the user's template exited: see the output"

    def server_of(self, client_pid: int) -> int:
        """The server forked for the ``--warm`` client ``client_pid``: the template's one
        child (each test stops its servers; the template reaps them before it says so)."""
        servers = children(self.process.pid)
        assert len(servers) == 1, (servers, client_pid)
        return servers[0]


@pytest.fixture(scope="module")
def user_template() -> Iterator[UserTemplate]:
    require("nobody")
    python, python_env = python_for("nobody")
    with user_dir("nobody", "tiller-warm-") as runtime:
        runtime.chmod(0o700)
        make_dir(runtime / "tiller", "nobody").chmod(0o700)
        env = {name: os.environ[name] for name in TEMPLATE_ENV if name in os.environ}
        env.update(python_env)
        argv = [python, "-m", "tiller.warm.template", str(runtime / "tiller"), "--idle", "600"]
        process = subprocess.Popen(
            as_user("nobody", argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=env,
            cwd="/",
            start_new_session=True,
        )
        try:
            yield UserTemplate(runtime, process)
        finally:
            for pid in [process.pid, *children(process.pid)]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            process.wait(30)


@pytest_asyncio.fixture
async def api() -> AsyncIterator[FakeMessagesAPI]:
    async with FakeMessagesAPI(api_key=SECRET) as fake:
        yield fake


@dataclass
class Server:
    tiller: Tiller
    pid: int
    python: str


@pytest_asyncio.fixture
async def launch(
    place: Place, api: FakeMessagesAPI, request: pytest.FixtureRequest
) -> AsyncIterator[Any]:
    """Start a server for ``place.user`` with the key in its environment: forked from the
    suite's template as root, from the user's template through ``python -m tiller --warm``
    as the user; ``spawned`` (or ``TILLER_TEST_FORK=0``): ``python -m tiller`` as the user."""
    running: list[Tiller] = []

    async def launcher(spawned: bool = False, **options: Any) -> Server:
        python, python_env = python_for(place.user)
        env = {
            **server_env(place.data),
            **python_env,
            "HOME": str(place.home),
            "ANTHROPIC_API_KEY": SECRET,
        }
        template: UserTemplate | None = None
        if spawned or (place.user != "root" and not FORK):
            client = await spawn_client(as_user(place.user, [python, "-m", "tiller"]), env)
        elif place.user == "root":
            client = await start_client(env)  # its _server.pid: the forked server's own
        else:
            template = request.getfixturevalue("user_template")
            await template.ready()
            env["XDG_RUNTIME_DIR"] = str(template.runtime)
            argv = as_user(place.user, [python, "-m", "tiller", "--warm"])
            client = await spawn_client(argv, env)
        tiller = Tiller(client, place.ws)
        running.append(tiller)
        await client.initialize_session(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                root_uri=place.ws.as_uri(),
                workspace_folders=[types.WorkspaceFolder(place.ws.as_uri(), "ws")],
                initialization_options={
                    "provider": {"kind": "anthropic", "baseUrl": api.base_url},
                    "model": "claude-test-1",
                    "dataDir": str(place.data),
                    **options,
                },
            )
        )
        server = client._server
        assert server is not None
        pid = server.pid if template is None else template.server_of(server.pid)
        return Server(tiller, pid, python)

    yield launcher
    for tiller in running:
        await stop_tiller(tiller)


def read(path: str) -> bytes:
    return Path(path).read_bytes()


async def allow(params: dict[str, Any]) -> dict[str, Any]:
    return {"decision": "allow"}


async def approved(server: Server, api: FakeMessagesAPI, command: str) -> str:
    """The model runs ``command``; the user approves it; its result as the model sees it."""
    tiller = server.tiller
    tiller.on_confirm = allow
    api.enqueue({"content": [tool_use("bash", "b1", command=command)]}, {"content": [text("done")]})
    ended = await tiller.run("run it", timeout=60)
    assert ended["outcome"] == "completed", ended
    assert [kind for kind, _ in tiller.asked] == ["tiller/confirmTool"]
    assert api.message_requests(), "the server never talked to the API"
    result = results_of(api, 1)[0]
    return str(result["content"])


async def sandbox_of(server: Server) -> str:
    state = await server.tiller.request("tiller/getState")
    return str(state["sandbox"])


# --- a hostile program in the sandbox ---------------------------------------------------------


@needs_bwrap
async def test_sandbox_cannot_bind_mount_home_writable(
    place: Place, launch: Any, api: FakeMessagesAPI
) -> None:
    """The issue's attack: ``mount --bind $HOME $HOME`` + ``remount,rw`` created $HOME/PWN."""
    server = await launch(sandbox="always")
    assert await sandbox_of(server) == "bwrap"
    command = (
        'test -d "$HOME" && echo home visible; '
        'mount --bind "$HOME" "$HOME" && mount -o remount,rw,bind "$HOME" '
        '&& echo pwn > "$HOME/PWN"; echo done'
    )
    out = await approved(server, api, command)
    assert "home visible" in out and "done" in out
    assert list(place.home.iterdir()) == []


@needs_bwrap
async def test_sandbox_cannot_unshare_a_user_namespace(
    place: Place, launch: Any, api: FakeMessagesAPI
) -> None:
    """``unshare -rm`` worked: a namespace of one's own, with every capability in it."""
    server = await launch(sandbox="always")
    command = "command -v unshare; unshare -rm true && echo UNSHARED; unshare -U true && echo UNSHARED; echo done"  # noqa: E501
    out = await approved(server, api, command)
    assert "unshare" in out.splitlines()[0] and "done" in out
    assert "UNSHARED" not in out


@needs_bwrap
async def test_sandbox_cannot_write_core_pattern(
    place: Place, launch: Any, api: FakeMessagesAPI
) -> None:
    """/proc/sys/kernel/core_pattern was writable: a program the kernel runs as root. The
    command writes back what it read: should the sandbox fail, nothing changes."""
    before = read("/proc/sys/kernel/core_pattern")
    server = await launch(sandbox="always")
    command = (
        "umount -l /proc/sys; mount -o remount,rw /proc/sys; "
        "v=$(cat /proc/sys/kernel/core_pattern) && echo read; "
        'printf "%s\\n" "$v" > /proc/sys/kernel/core_pattern && echo WROTE; echo done'
    )
    out = await approved(server, api, command)
    assert "read" in out.splitlines() and "done" in out
    assert "WROTE" not in out and "Read-only file system" in out
    assert read("/proc/sys/kernel/core_pattern") == before


@needs_bwrap
async def test_sandbox_cannot_set_a_sysctl(place: Place, launch: Any, api: FakeMessagesAPI) -> None:
    server = await launch(sandbox="always")
    command = (
        "command -v sysctl; "
        'sysctl -w kernel.domainname="$(cat /proc/sys/kernel/domainname)" && echo WROTE; '
        'sysctl -w vm.max_map_count="$(cat /proc/sys/vm/max_map_count)" && echo WROTE; '
        "echo done"
    )
    out = await approved(server, api, command)
    assert "sysctl" in out.splitlines()[0] and "done" in out
    assert "WROTE" not in out


# --- approved commands and the server's key ---------------------------------------------------

FIELDS = "^(ANTHROPIC_|TILLER_DATA_DIR=)"


def environ_walk(server_pid: int) -> str:
    """Up from $PPID to pid 0 (or to the server), then the server's pid as the host knows it:
    each process's command line and the variables of its environment that matter here."""
    show = f'tr "\\0" "\\n" < /proc/$p/environ | grep -aE "{FIELDS}"'
    return (
        "p=$PPID; "
        f'while [ "$p" -gt 0 ] && [ "$p" != {server_pid} ]; do '
        'echo "== pid $p: $(tr "\\0" " " < /proc/$p/cmdline)"; '
        f"{show}; "
        'p=$(sed "s/.*) //" /proc/$p/stat | cut -d" " -f2); '
        "done; "
        f"p={server_pid}; "
        'echo "== pid $p: $(tr "\\0" " " < /proc/$p/cmdline)"; '
        f"{show}; echo walked"
    )


MEM_SCAN = """
import os, sys
key = sys.argv[1][::-1].encode()

def parent(pid):
    with open(f"/proc/{pid}/stat", "rb") as stat:
        return int(stat.read().rsplit(b")", 1)[1].split()[1])

def scan(pid, name):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\\0", b" ").decode(errors="replace")
    except OSError as err:
        cmd = f"({err.strerror})"
    try:
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb", 0)
    except OSError as err:
        return f"== {name}: {cmd}: {err.strerror}"
    with mem:
        for line in maps:
            span, perms = line.split()[:2]
            start, end = (int(x, 16) for x in span.split("-"))
            if perms[0] != "r" or end - start > 1 << 30:
                continue
            try:
                mem.seek(start)
                if key in mem.read(end - start):
                    return f"== {name}: {cmd}: KEY FOUND"
            except (OSError, OverflowError, ValueError):
                continue
    return f"== {name}: {cmd}: no key"

server = int(sys.argv[2])
pid = os.getppid()
while pid > 0 and pid != server:  # (beyond the server: the test itself, which knows the key)
    print(scan(pid, f"pid {pid}"), flush=True)
    pid = parent(pid)
print(scan(server, "server pid"), flush=True)
print(scan(os.getpid(), "self"), flush=True)  # the control: this process holds the key
"""


def mem_scan(server: Server) -> str:
    """Every readable mapping of every ancestor (up to the server) and of the server's pid,
    searched for the key (given reversed: the command line must not hold it)."""
    return f"{server.python} -I - {SECRET[::-1]} {server.pid} <<'EOF'\n{MEM_SCAN}\nEOF"


def sections(out: str) -> dict[str, str]:
    """The walk's output by process: header line -> what followed it."""
    found: dict[str, str] = {}
    header = ""
    for line in out.splitlines():
        if line.startswith("== "):
            header = line
            found[header] = ""
        elif header:
            found[header] += line + "\n"
    return found


def server_sections(out: str) -> dict[str, str]:
    return {h: body for h, body in sections(out).items() if "-m tiller" in h}


@needs_bwrap
async def test_approved_command_cannot_read_server_environ(
    place: Place, launch: Any, api: FakeMessagesAPI
) -> None:
    server = await launch()
    assert await sandbox_of(server) == "bwrap"
    out = await approved(server, api, environ_walk(server.pid))
    assert "walked" in out
    assert any("supervisor.py" in header for header in sections(out)), out
    assert "TILLER_DATA_DIR=" in out  # the walk reads environments: its own supervisor's
    assert server_sections(out) == {}, out  # the server is not there to be read
    assert SECRET not in out


@needs_bwrap
async def test_approved_command_cannot_read_server_mem(
    place: Place, launch: Any, api: FakeMessagesAPI
) -> None:
    server = await launch()
    out = await approved(server, api, mem_scan(server))
    lines = [line for line in out.splitlines() if line.startswith("== ")]
    assert lines[-1].startswith("== self:") and lines[-1].endswith("KEY FOUND"), out
    assert not [line for line in lines[:-1] if "KEY FOUND" in line], out
    assert server_sections(out) == {}, out
    assert SECRET not in out


@needs_bwrap
async def test_approved_command_ps_shows_no_server(
    place: Place, launch: Any, api: FakeMessagesAPI
) -> None:
    server = await launch()
    out = await approved(server, api, "ps -ww -e -o pid=,args=")
    listed = [line.split(None, 1)[1] for line in out.splitlines()]
    assert "ps -ww -e -o pid=,args=" in listed and "-m tiller" not in out
    # bwrap's init, the supervisor, (bash,) ps: nothing from outside
    for args in listed:
        program = Path(args.split()[0]).name
        assert program in {"bwrap", "bash", "ps"} or "supervisor.py" in args, out


# --- without the PID namespace (sandbox "off") ------------------------------------------------


async def test_unsandboxed_approved_command_cannot_read_server_environ(
    place: Place, launch: Any, api: FakeMessagesAPI
) -> None:
    """The walk reaches the server. A normal user may not read its environment (the server
    is not dumpable); root may, and finds the key blanked there. Spawned as root too: the
    block is the one ``exec`` wrote with the key in it (a forked server shows the
    template's, which never held one)."""
    server = await launch(spawned=True, sandbox="off")
    assert await sandbox_of(server) == "none"
    out = await approved(server, api, environ_walk(server.pid))
    found = server_sections(out)
    assert found, out  # the supervisor's parent, read by its pid
    for body in found.values():
        if place.user == "root":
            assert "TILLER_DATA_DIR=" in body and "ANTHROPIC_API_KEY=\n" in body, out
        else:
            assert "Permission denied" in body and "TILLER_DATA_DIR=" not in body, out
    assert SECRET not in out


@pytest.mark.parametrize("place", [USERS[1]], indirect=True)
async def test_unsandboxed_approved_command_cannot_read_server_mem_as_a_normal_user(
    place: Place, launch: Any, api: FakeMessagesAPI
) -> None:
    """Only a normal user is stopped, by the server being non-dumpable: root reads every
    process's memory (CAP_SYS_PTRACE), as docs/security.md says."""
    server = await launch(sandbox="off")
    out = await approved(server, api, mem_scan(server))
    lines = [line for line in out.splitlines() if line.startswith("== ")]
    assert lines[-1].startswith("== self:") and lines[-1].endswith("KEY FOUND"), out
    found = [line for line in lines if "-m tiller" in line]
    assert found and all(line.endswith("Permission denied") for line in found), out
    assert not [line for line in lines[:-1] if "KEY FOUND" in line], out
    assert SECRET not in out
