"""The bubblewrap sandbox: real bwrap, real bash, real writes that fail."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tiller.tools.sandbox import (
    Confined,
    ShellPolicy,
    Unavailable,
    Unconfined,
    bwrap_works,
    choose_backend,
)
from tiller.tools.shell import CommandRun, run_command

needs_bwrap = pytest.mark.skipif(not bwrap_works(), reason="bubblewrap does not work here")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    return root


async def confined(command: str, ws: Path, *, writable: bool = False) -> CommandRun:
    return await run_command(command, ws, 30, confinement=Confined(writable))


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def exists(path: Path) -> bool:
    return path.exists()


def test_sandbox_off_never_uses_bwrap() -> None:
    assert choose_backend("off") == "none"


@needs_bwrap
def test_auto_and_always_use_bwrap_when_it_works() -> None:
    assert choose_backend("auto") == "bwrap" and choose_backend("always") == "bwrap"


def test_policy_confines_unasked_commands_only_where_a_sandbox_exists() -> None:
    with_bwrap = ShellPolicy("auto", "bwrap")
    assert with_bwrap.confinement(asked=False) == Confined(writable=False)
    assert with_bwrap.confinement(asked=True) == Unconfined()
    assert ShellPolicy("auto", "none").confinement(asked=False) == Unconfined()
    always = ShellPolicy("always", "bwrap")
    assert always.confinement(asked=True) == Confined(writable=True)
    assert always.confinement(asked=False) == Confined(writable=False)
    assert isinstance(ShellPolicy("always", "none").confinement(asked=True), Unavailable)


@needs_bwrap
async def test_read_only_sandbox_cannot_write_the_workspace(ws: Path) -> None:
    run = await confined("cat a.txt; touch new.txt; echo more >> a.txt; rm a.txt; ls", ws)
    assert "hello" in run.output and "Read-only file system" in run.output
    assert names(ws) == ["a.txt"]
    assert (ws / "a.txt").read_text() == "hello\n"


@needs_bwrap
async def test_read_only_sandbox_cannot_write_anywhere(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    run = await confined(f"touch {outside}; touch /root-marker; echo $?", ws)
    assert "Read-only file system" in run.output
    assert not exists(outside) and not exists(Path("/root-marker"))


@needs_bwrap
async def test_sandbox_tmp_is_private(ws: Path) -> None:
    marker = Path("/tmp") / f"tiller-sandbox-probe-{id(ws)}"
    run = await confined(f"echo x > {marker} && cat {marker}", ws)
    assert run.exit_code == 0 and run.output == "x\n"
    assert not marker.exists()


@needs_bwrap
async def test_sandbox_has_no_network(ws: Path) -> None:
    run = await confined("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", ws)
    assert run.output.split() == ["lo"]


@needs_bwrap
async def test_sandbox_hides_host_sockets_under_run(ws: Path) -> None:
    run = await confined("ls -A /run | wc -l", ws)
    assert run.output.strip() == "0"


@needs_bwrap
async def test_sandbox_has_its_own_pid_namespace(ws: Path) -> None:
    run = await confined("tr '\\0' ' ' < /proc/1/cmdline; echo; ls /proc | grep -c '^[0-9]'", ws)
    first, count = run.output.splitlines()
    assert "bwrap" in first
    assert int(count) < 10  # only the sandbox's own processes are visible


@needs_bwrap
async def test_background_processes_die_with_the_sandboxed_command(ws: Path) -> None:
    await confined("(sleep 1; echo late > /tmp/x; cat /tmp/x) & echo started", ws)
    await asyncio.sleep(1.5)
    run = await confined("ps -e -o comm= | grep -c sleep || true", ws)
    assert run.output.strip() == "0"


@needs_bwrap
async def test_always_sandbox_writes_the_workspace_only(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"  # under /tmp: the sandbox's private /tmp takes it
    run = await confined(
        f"touch made.txt; touch {outside}; touch /etc/tiller-marker", ws, writable=True
    )
    assert (ws / "made.txt").exists()
    assert not exists(outside) and not exists(Path("/etc/tiller-marker"))
    assert "Read-only file system" in run.output


@needs_bwrap
async def test_sandboxed_command_dies_with_the_server(ws: Path, tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(
        "import asyncio, pathlib, sys\n"
        "from tiller.tools.sandbox import Confined\n"
        "from tiller.tools.shell import run_command\n"
        "ws = pathlib.Path(sys.argv[1])\n"
        "asyncio.run(run_command('sleep 1000', ws, 60, confinement=Confined(True)))\n"
    )
    server = await asyncio.create_subprocess_exec(sys.executable, str(script), str(ws))
    for _ in range(200):
        if _sleepers(ws):
            break
        await asyncio.sleep(0.05)
    assert _sleepers(ws), "the sandboxed sleep never started"
    server.kill()
    await server.wait()
    for _ in range(100):
        if not _sleepers(ws):
            break
        await asyncio.sleep(0.05)
    assert not _sleepers(ws)


def _sleepers(ws: Path) -> list[int]:
    """Pids of ``sleep 1000`` processes whose cwd is ``ws`` (ours, not another test's)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "cmdline").read_bytes() == b"sleep\x001000\x00" and (
                proc / "cwd"
            ).resolve() == ws.resolve():
                found.append(int(proc.name))
        except OSError:
            continue
    return found
