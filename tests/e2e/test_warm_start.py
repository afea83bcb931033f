"""The warm start (``tiller.warm``): clients get servers forked from a per-user template.

Each test has a private runtime dir (``tests/warm.py``), so its template is its own and is
stopped after it. Clients are the real ones: ``tiller run``, ``tiller acp`` and
``python -m tiller --warm`` as subprocesses, and ``ServerProcess`` (what ``tiller run`` and
``tiller chat`` use) in the test process. The model is the fake Messages API.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from fakeapi import FakeMessagesAPI
from processes import alive, children, until
from tiller.faces.client.jsonrpc import Handlers
from tiller.faces.client.server import ServerProcess
from tiller.faces.forked import client as warm_client
from tiller.faces.forked.client import ForkedProcess, fork_server
from tiller.faces.forked.place import Place
from warm import WarmPlace

TILLER = [sys.executable, "-m", "tiller.faces.cli"]
MODEL = "claude-test-1"
# One worker runs the module (scripts/test.sh: --dist loadgroup): the ``shared`` template is
# started once, not once per worker.
pytestmark = pytest.mark.xdist_group("warm_start")


@pytest_asyncio.fixture
async def warm() -> AsyncIterator[WarmPlace]:
    """A place of the test's own (tests that start, kill, replace or idle out a template)."""
    place = WarmPlace()
    try:
        yield place
    finally:
        await place.close()


@pytest.fixture(scope="module")
def shared() -> Iterator[WarmPlace]:
    """A place and its template shared by this module's tests that leave it as it is."""
    place = WarmPlace()
    warm_client.start_template(place.place, place.env())
    try:
        yield place
    finally:
        place.stop()
        shutil.rmtree(place.root, ignore_errors=True)


async def run_cli(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float = 60
) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *TILLER, *args,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env=env, cwd=cwd,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(process.communicate(), timeout)
    return await process.wait(), output.decode(errors="replace")


def hello_env(
    warm: WarmPlace, api: FakeMessagesAPI, tmp_path: Path, **extra: str
) -> dict[str, str]:
    return warm.env(
        ANTHROPIC_API_KEY="test-key",
        ANTHROPIC_BASE_URL=api.base_url,
        TILLER_DATA_DIR=str(tmp_path / "data"),
        TILLER_MODEL=MODEL,
        **extra,
    )


async def start_server(env: dict[str, str]) -> ServerProcess:
    return await ServerProcess.start(Handlers(), lambda line: None, env=env)


async def initialize(server: ServerProcess, workspace: Path) -> None:
    await server.initialize((workspace,), {"provider": {"kind": "scripted", "script": "demo"}}, "t")


# --- tiller run ---------------------------------------------------------------------------


async def test_a_second_tiller_run_is_forked_from_the_template_with_the_clients_key_env_and_cwd(
    warm: WarmPlace, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    # The first run finds no template: it spawns its server and starts one for the next.
    api.enqueue({"content": [{"type": "text", "text": "first"}]})
    code, output = await run_cli(
        ["run", "--yes", "hello"], hello_env(warm, api, tmp_path), workspace
    )
    assert code == 0, output
    template = await warm.ready()
    assert children(template) == []

    seen: dict[str, Any] = {}

    def ask_for_the_marker(body: Any) -> dict[str, Any]:
        seen["forks"] = children(template)  # while the server waits for this answer
        return {"content": [{"type": "tool_use", "id": "t1", "name": "bash",
                             "input": {"command": "echo marker=$WARM_MARKER"}}]}  # fmt: skip

    api.enqueue(ask_for_the_marker, {"content": [{"type": "text", "text": "second"}]})
    env = hello_env(warm, api, tmp_path, WARM_MARKER="from-the-client")
    env["ANTHROPIC_API_KEY"] = "second-key"
    env["TILLER_DATA_DIR"] = "relative-data"  # resolved against the server's cwd
    api.api_key = "second-key"
    code, output = await run_cli(["run", "--yes", "hello"], env, workspace)
    assert code == 0, output
    assert "second" in output

    assert len(seen["forks"]) == 2  # the template's children ran it: the command, its server
    requests = api.message_requests()
    assert [r.api_key for r in requests] == ["test-key", "second-key", "second-key"]
    assert "marker=from-the-client" in json.dumps(requests[-1].body["messages"][-1])
    assert (workspace / "relative-data").is_dir()  # the client's cwd was the server's
    assert warm.templates() == [template]


async def test_tiller_run_is_run_by_a_fork_with_the_clients_streams_stdin_and_exit_code(
    shared: WarmPlace, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    """The ``tiller`` process hands the whole command to a fork of the template: the process
    started has no child of its own (no server spawned), the fork's output is encoded as the
    client's interpreter would (here ``PYTHONIOENCODING``, which the template's own streams
    never saw), the prompt comes from the client's stdin, and its exit code is the client's."""
    template = await shared.ready()
    env = hello_env(shared, api, tmp_path, PYTHONIOENCODING="latin-1:backslashreplace")
    seen: dict[str, Any] = {}

    def answer(body: Any) -> dict[str, Any]:
        seen["forks"] = children(template)
        seen["client children"] = children(seen["client"])
        return {"content": [{"type": "text", "text": "café ☃"}]}

    api.enqueue(answer)
    process = await asyncio.create_subprocess_exec(
        *TILLER, "run", "--yes", "-",
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, cwd=workspace,
    )  # fmt: skip
    seen["client"] = process.pid
    out, err = await asyncio.wait_for(process.communicate(b"a prompt from stdin\n"), 60)
    assert await process.wait() == 0, err
    assert len(seen["forks"]) == 2 and seen["client children"] == [], seen  # command + server
    assert b"caf\xe9 \\u2603" in out  # latin-1, and the rest escaped, as the client's stdout
    [request] = api.message_requests()
    assert "a prompt from stdin" in json.dumps(request.body["messages"][-1])

    code, output = await run_cli(["run", "--no-such-option"], env, workspace)
    assert code == 64 and "unrecognized arguments: --no-such-option" in output, output
    assert shared.templates() == [template]


async def test_ctrl_c_on_a_forked_tiller_run_ends_it_as_a_spawned_one_would(
    shared: WarmPlace, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    """SIGINT reaches the ``tiller`` process (the terminal's foreground); it passes it on to
    the fork running the command, which quits as the plain client does: exit 130, and the
    command and its server are gone."""
    template = await shared.ready()
    api.enqueue({"content": [{"type": "text", "text": "never whole"}], "hangAfterEvents": 2})
    process = await asyncio.create_subprocess_exec(
        *TILLER, "run", "--yes", "hello",
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env=hello_env(shared, api, tmp_path), cwd=workspace,
    )  # fmt: skip
    await api.wait_hanging(timeout=60)
    assert len(children(template)) == 2
    process.send_signal(signal.SIGINT)
    output, _ = await asyncio.wait_for(process.communicate(), 60)
    assert await process.wait() == 130, output
    await until(lambda: children(template) == [])


async def test_a_dead_template_falls_back_to_a_plain_spawn_and_is_started_again(
    warm: WarmPlace, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    env = hello_env(warm, api, tmp_path)
    warm_client.start_template(warm.place, env)  # as a first run starts it (the first test)
    template = await warm.ready()
    os.kill(template, signal.SIGKILL)  # its socket stays behind, refusing connections
    await until(lambda: not alive(template))
    assert warm.place.socket.exists()

    code, output = await run_cli(["run", "--yes", "hello"], env, workspace)
    assert code == 0, output
    assert await warm.ready() != template


# --- ServerProcess (tiller run, tiller chat) -----------------------------------------------


async def test_two_clients_at_once_get_two_isolated_servers_and_a_crash_stays_in_its_own(
    shared: WarmPlace, workspace: Path, tmp_path: Path
) -> None:
    warm = shared
    env = warm.env(TILLER_DATA_DIR=str(tmp_path / "data"))
    template = await warm.ready()

    one, two = await asyncio.gather(
        start_server({**env, "TILLER_DATA_DIR": str(tmp_path / "one")}),
        start_server({**env, "TILLER_DATA_DIR": str(tmp_path / "two")}),
    )
    assert isinstance(one.process, ForkedProcess) and isinstance(two.process, ForkedProcess)
    assert one.process.pid != two.process.pid
    assert sorted(children(template)) == sorted([one.process.pid, two.process.pid])
    await asyncio.gather(initialize(one, workspace), initialize(two, workspace))

    one.kill()  # one server crashes: the other and the template go on
    assert await one.process.wait() == -signal.SIGKILL
    state = await two.request("tiller/getState", {})
    assert state["sessionId"]
    await two.shutdown()
    assert two.returncode == 0
    assert warm.templates() == [template]
    await until(lambda: children(template) == [])


async def test_a_client_that_goes_away_takes_its_server_with_it(
    shared: WarmPlace, workspace: Path, tmp_path: Path
) -> None:
    warm = shared
    env = warm.env(TILLER_DATA_DIR=str(tmp_path / "data"))
    template = await warm.ready()
    waiter = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tiller", "--warm",
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=workspace,
    )  # fmt: skip
    servers = await until(lambda: children(template))
    waiter.kill()  # the client's process dies without a word
    await waiter.wait()
    await until(lambda: not any(alive(pid) for pid in servers))


async def test_the_template_is_replaced_when_the_installed_version_changes(
    warm: WarmPlace, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = warm.env(TILLER_DATA_DIR=str(tmp_path / "data"))
    warm_client.start_template(warm.place, env)
    old = await warm.ready()

    monkeypatch.setattr(warm_client, "version_stamp", lambda: "a-newer-install")
    server = await start_server(env)  # the old one leaves; this one is spawned meanwhile
    assert not isinstance(server.process, ForkedProcess)
    await initialize(server, workspace)
    await server.shutdown()
    await until(lambda: not alive(old))
    new = await warm.ready()  # started by that client
    assert new != old


async def test_the_template_exits_when_idle(warm: WarmPlace, tmp_path: Path) -> None:
    warm.idle_seconds = 2
    warm_client.start_template(warm.place, warm.env())
    template = await warm.ready()
    await until(lambda: not alive(template))
    assert not warm.place.socket.exists()


# --- tiller acp and python -m tiller --warm --------------------------------------------------


async def test_tiller_acp_is_answered_by_a_forked_server(
    shared: WarmPlace, workspace: Path, tmp_path: Path
) -> None:
    warm = shared
    env = warm.env(TILLER_DATA_DIR=str(tmp_path / "data"))
    template = await warm.ready()
    acp = await asyncio.create_subprocess_exec(
        *TILLER, "acp",
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=workspace,
    )  # fmt: skip
    assert acp.stdin is not None and acp.stdout is not None
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": 1, "clientCapabilities": {}}}  # fmt: skip
    acp.stdin.write(json.dumps(message).encode() + b"\n")
    answer = json.loads(await asyncio.wait_for(acp.stdout.readline(), 30))
    assert answer["result"]["agentInfo"]["name"] == "tiller"
    servers = children(template)
    assert len(servers) == 1 and servers[0] != acp.pid
    acp.stdin.close()  # the editor closes the pipe: the server ends, then its waiter
    assert await asyncio.wait_for(acp.wait(), 30) == 0
    await until(lambda: not alive(servers[0]))


# --- who may use the socket ----------------------------------------------------------------


def _listening(path: Path) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(path))
    listener.listen(1)
    listener.setblocking(False)
    return listener


def test_a_socket_with_loose_mode_is_refused(warm: WarmPlace) -> None:
    with _listening(warm.place.socket) as impostor:
        warm.place.socket.chmod(0o666)
        assert fork_server([], [0, 1, 2], env=warm.env()) is None
        with pytest.raises(BlockingIOError):
            impostor.accept()  # never even connected to


@pytest.mark.skipif(os.getuid() != 0, reason="giving a socket to another uid takes root")
def test_a_socket_owned_by_another_user_is_refused(warm: WarmPlace) -> None:
    with _listening(warm.place.socket) as impostor:
        warm.place.socket.chmod(0o600)
        os.chown(warm.place.socket, 65534, 65534)
        assert fork_server([], [0, 1, 2], env=warm.env()) is None
        with pytest.raises(BlockingIOError):
            impostor.accept()


def test_a_runtime_dir_others_can_enter_is_not_used(tmp_path: Path) -> None:
    loose = tmp_path / "run"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    place = Place.find({"XDG_RUNTIME_DIR": str(loose)})
    assert place.directory == Path("/tmp") / f"tiller-{os.getuid()}"
    assert place.directory.stat().st_mode & 0o777 == 0o700


@pytest.mark.skipif(os.getuid() != 0, reason="connecting as another uid takes root")
async def test_the_template_closes_a_connection_from_another_uid_without_an_answer(
    shared: WarmPlace,
) -> None:
    await shared.ready()
    # Open the folder and the socket to everyone, as a mistake would: SO_PEERCRED still holds.
    # (Closed again after: the module's other tests use this template.)
    with opened_to_everyone(shared):
        said = await said_to_another_uid(shared.place.socket)
    assert said == "b''"  # closed, nothing said (else: "refused")


@contextlib.contextmanager
def opened_to_everyone(warm: WarmPlace) -> Iterator[None]:
    modes = [(path, path.stat().st_mode & 0o777) for path in (warm.root, warm.place.directory)]
    socket_mode = warm.place.socket.stat().st_mode & 0o777
    try:
        warm.root.chmod(0o755)
        warm.place.directory.chmod(0o755)
        warm.place.socket.chmod(0o666)
        yield
    finally:
        warm.place.socket.chmod(socket_mode)
        for path, mode in modes:
            path.chmod(mode)


async def said_to_another_uid(socket_path: Path) -> str:
    """What the template answers uid 65534's ``{}`` on ``socket_path`` (its repr)."""
    probe = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
        "s.connect(sys.argv[1])\n"
        "try:\n"
        "    s.send(b'{}')\n"
        "    print(repr(s.recv(4096)))\n"
        "except OSError:\n"
        "    print(repr(b''))\n"
    )
    done = await asyncio.to_thread(
        subprocess.run,
        ["/usr/bin/python3", "-c", probe, str(socket_path)],
        user=65534,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
