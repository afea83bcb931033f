"""The bubblewrap sandbox: real bwrap, real bash, real writes that fail.

The attacks run the argv that ``confine`` and ``isolate`` build, as root and as an
unprivileged user (``users.py``): bwrap started by root keeps every capability unless told
otherwise, so what holds for a normal user proves nothing for root.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from processes import host_pids, sleep_marker, until
from tiller.tools.shell import CommandRun, run_command
from tiller.workspace import sandbox
from tiller.workspace.sandbox import (
    HARDENED,
    HARDENED_OLD_BWRAP,
    ROOT_WITHOUT_USERNS,
    Confined,
    Isolated,
    ShellPolicy,
    Unavailable,
    Unconfined,
    bwrap_works,
    choose_backend,
    confine,
    isolate,
    sandbox_hardening,
)
from tiller.workspace.tool_env import tool_env
from users import USERS, User, as_user, make_dir, require, user_dir

needs_bwrap = pytest.mark.skipif(not bwrap_works(), reason="bubblewrap does not work here")


@pytest.fixture
def ws(ws: Path) -> Path:
    """The shared workspace, holding ``a.txt``."""
    (ws / "a.txt").write_text("hello\n")
    return ws


async def confined(command: str, ws: Path, *, writable: bool = False) -> CommandRun:
    return await run_command(command, ws, 30, confinement=Confined(writable))


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def exists(path: Path) -> bool:
    return path.exists()


def read(path: str) -> bytes:
    return Path(path).read_bytes()


def test_sandbox_off_never_uses_bwrap() -> None:
    assert choose_backend("off") == "none"


@needs_bwrap
def test_auto_and_always_use_bwrap_when_it_works() -> None:
    assert choose_backend("auto") == "bwrap" and choose_backend("always") == "bwrap"


def test_policy_confines_unasked_commands_only_where_a_sandbox_exists() -> None:
    with_bwrap = ShellPolicy("auto", "bwrap")
    assert with_bwrap.confinement(asked=False) == Confined(writable=False)
    assert with_bwrap.confinement(asked=True) == Isolated()
    assert ShellPolicy("auto", "none").confinement(asked=False) == Unconfined()
    assert ShellPolicy("auto", "none").confinement(asked=True) == Unconfined()
    assert ShellPolicy("off", "none").confinement(asked=True) == Unconfined()
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
    """Seen from the host: ``ps`` in a later sandbox sees only that sandbox's own processes,
    so it cannot tell whether one of an earlier command survived."""
    marker = sleep_marker()
    task = asyncio.create_task(
        confined(f"sleep {marker} & while [ ! -e go ]; do sleep 0.01; done; echo ended", ws)
    )
    await until(lambda: host_pids("sleep", marker))  # it runs, and the host sees it
    (ws / "go").touch()  # the sandbox sees the workspace as it changes
    run = await task
    assert run.exit_code == 0 and run.output == "ended\n"
    assert host_pids("sleep", marker) == []


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
        "from tiller.workspace.sandbox import Confined\n"
        "from tiller.tools.shell import run_command\n"
        "ws = pathlib.Path(sys.argv[1])\n"
        "asyncio.run(run_command('sleep 1000', ws, 60, confinement=Confined(True)))\n"
    )
    server = await asyncio.create_subprocess_exec(sys.executable, str(script), str(ws))
    await until(lambda: _sleepers(ws))  # the sandboxed sleep runs
    server.kill()
    await server.wait()
    await until(lambda: not _sleepers(ws))


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


# --- a hostile program in the sandbox, as root and as a normal user ---------------------------


def _bwrap_version() -> tuple[int, ...]:
    try:
        out = subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout
    except OSError:
        return ()
    found = re.search(r"(\d+)\.(\d+)", out)
    return (int(found[1]), int(found[2])) if found else ()


@needs_bwrap
def test_the_sandbox_drops_capabilities_and_user_namespaces() -> None:
    if _bwrap_version() < (0, 8):
        pytest.skip("bubblewrap before 0.8 has no --disable-userns")
    assert sandbox_hardening() == HARDENED


@dataclass(frozen=True)
class Place:
    """A workspace and a home directory a hostile program would like to write."""

    user: User
    ws: Path
    home: Path


@pytest.fixture(params=USERS)
def place(request: pytest.FixtureRequest) -> Iterator[Place]:
    user: User = request.param
    require(user)
    with user_dir(user) as base:
        ws = make_dir(base / "ws", user)
        (ws / "a.txt").write_text("hello\n")
        os.chown(ws / "a.txt", ws.stat().st_uid, ws.stat().st_gid)
        yield Place(user, ws, make_dir(base / "home", user))


async def run_as(place: Place, argv: list[str]) -> str:
    """``argv`` run as ``place.user`` from the workspace; its merged output."""
    process = await asyncio.create_subprocess_exec(
        *as_user(place.user, argv),
        cwd=place.ws,
        env={**tool_env(), "HOME": str(place.home)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    out, _ = await process.communicate()
    return out.decode(errors="replace")


async def hostile(place: Place, script: str, *, writable: bool = False) -> str:
    """``script`` run by bash in the sandbox as ``place.user``, from the argv ``confine``
    builds; its merged output."""
    return await run_as(place, confine(["bash", "-c", script], place.ws, writable))


@needs_bwrap
@pytest.mark.parametrize("writable", [False, True], ids=["read_only", "writable_workspace"])
async def test_root_sandbox_has_no_capabilities(place: Place, writable: bool) -> None:
    script = "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status"
    out = await hostile(place, script, writable=writable)
    caps = dict(line.split(":\t") for line in out.splitlines())
    assert set(caps) == {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs"}, out
    assert {caps.pop("NoNewPrivs")} == {"1"}
    assert set(caps.values()) == {"0000000000000000"}, out


@needs_bwrap
@pytest.mark.parametrize("writable", [False, True], ids=["read_only", "writable_workspace"])
async def test_root_sandbox_cannot_bind_mount_home_writable(place: Place, writable: bool) -> None:
    """The issue's attack: a "read-only" command's program made $HOME writable and wrote."""
    script = (
        'test -d "$HOME" && echo home visible; '
        'mount --bind "$HOME" "$HOME" && mount -o remount,rw,bind "$HOME" && echo pwn > "$HOME/PWN"; '  # noqa: E501
        "echo done"
    )
    out = await hostile(place, script, writable=writable)
    assert "home visible" in out and "done" in out
    assert not exists(place.home / "PWN")
    assert names(place.home) == []


@needs_bwrap
async def test_root_sandbox_cannot_remount_the_workspace_writable(place: Place) -> None:
    script = (
        'mount -o remount,rw,bind "$PWD" && echo pwn > PWN; '
        "mount -o remount,rw / && echo pwn > PWN2; "
        'umount -l "$PWD" && echo pwn > PWN3; '
        "echo done"
    )
    out = await hostile(place, script)
    assert "done" in out
    assert names(place.ws) == ["a.txt"]


@needs_bwrap
@pytest.mark.parametrize("writable", [False, True], ids=["read_only", "writable_workspace"])
async def test_root_sandbox_cannot_unshare_a_user_namespace(place: Place, writable: bool) -> None:
    """``unshare -rm`` gives back every capability, in a namespace of one's own."""
    if sandbox_hardening() != HARDENED:
        pytest.skip("bubblewrap before 0.8 cannot forbid nested user namespaces")
    script = "command -v unshare; unshare -rm true && echo UNSHARED; unshare -U true && echo UNSHARED; echo done"  # noqa: E501
    out = await hostile(place, script, writable=writable)
    assert "unshare" in out.splitlines()[0] and "done" in out
    assert "UNSHARED" not in out


@needs_bwrap
@pytest.mark.parametrize("writable", [False, True], ids=["read_only", "writable_workspace"])
async def test_root_sandbox_cannot_write_core_pattern(place: Place, writable: bool) -> None:
    """kernel.core_pattern names a program the kernel runs as root at the next crash.

    The script writes back the value it reads: should the sandbox fail, nothing changes.
    """
    before = read("/proc/sys/kernel/core_pattern")
    script = (
        "mount -o remount,rw /proc/sys; umount /proc/sys; umount -l /proc/sys; "
        "v=$(cat /proc/sys/kernel/core_pattern) && echo read; "
        'printf "%s\\n" "$v" > /proc/sys/kernel/core_pattern && echo WROTE; echo done'
    )
    out = await hostile(place, script, writable=writable)
    assert "read" in out.splitlines() and "done" in out
    assert "WROTE" not in out
    assert read("/proc/sys/kernel/core_pattern") == before


@needs_bwrap
@pytest.mark.parametrize("writable", [False, True], ids=["read_only", "writable_workspace"])
async def test_root_sandbox_cannot_set_a_sysctl(place: Place, writable: bool) -> None:
    """Through ``sysctl`` and by writing /proc/sys, a namespaced sysctl and a global one
    (each written back with the value it has)."""
    before = read("/proc/sys/vm/max_map_count")
    script = (
        "command -v sysctl; "
        'sysctl -w kernel.domainname="$(cat /proc/sys/kernel/domainname)" && echo WROTE; '
        'v=$(cat /proc/sys/vm/max_map_count) && echo "$v" > /proc/sys/vm/max_map_count && echo WROTE; '  # noqa: E501
        'sysctl -w vm.max_map_count="$v" && echo WROTE; echo done'
    )
    out = await hostile(place, script, writable=writable)
    assert "sysctl" in out.splitlines()[0] and "done" in out
    assert "WROTE" not in out
    assert read("/proc/sys/vm/max_map_count") == before


# --- approved commands: their own PID namespace -----------------------------------------------


async def isolated_as(place: Place, script: str) -> str:
    """``script`` run by bash as ``place.user`` from the argv ``isolate`` builds."""
    return await run_as(place, isolate(["bash", "-c", script], place.ws))


@needs_bwrap
async def test_isolated_command_sees_no_process_outside_it(place: Place) -> None:
    me = os.getpid()
    script = f"ps -e -o pid=,args=; test -e /proc/{me}/environ && echo seen-$((40 + 2)); echo done"
    out = await isolated_as(place, script)
    listed = [line.split(None, 1)[1] for line in out.splitlines() if line[:1] == " "]
    assert any(args.startswith("ps -e") for args in listed), out
    assert {Path(args.split()[0]).name for args in listed} == {"bwrap", "bash", "ps"}, out
    assert "seen-42" not in out and "done" in out


@needs_bwrap
async def test_isolated_command_writes_as_its_user_and_keeps_the_network(place: Place) -> None:
    """Unlike the sandbox: approved commands change files and reach the network as usual."""
    out = await isolated_as(
        place, f"echo made > made.txt; echo home > {place.home}/h.txt; cat /proc/net/dev"
    )
    assert (place.ws / "made.txt").read_text() == "made\n"
    assert (place.home / "h.txt").read_text() == "home\n"
    interfaces = {line.split(":")[0].strip() for line in out.splitlines() if ":" in line}
    host = {
        line.split(":")[0].strip()
        for line in read("/proc/net/dev").decode().splitlines()
        if ":" in line
    }
    assert interfaces == host


@needs_bwrap
@pytest.mark.parametrize("place", [USERS[0]], indirect=True)  # root's fallbacks
@pytest.mark.parametrize("hardening", [HARDENED_OLD_BWRAP, ROOT_WITHOUT_USERNS])
async def test_root_sandbox_fallbacks_still_hold_the_filesystem_and_sysctls(
    place: Place, hardening: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the probe settles for with an older bwrap or without user namespaces (where
    ``unshare`` would fail anyway) still stops the mount and sysctl attacks."""
    monkeypatch.setattr(sandbox, "sandbox_hardening", lambda: hardening)
    before = read("/proc/sys/kernel/core_pattern")
    script = (
        'mount --bind "$HOME" "$HOME" && mount -o remount,rw,bind "$HOME" && echo pwn > "$HOME/PWN"; '  # noqa: E501
        'mount -o remount,rw,bind "$PWD" && echo pwn > PWN; '
        'v=$(cat /proc/sys/kernel/core_pattern) && printf "%s\\n" "$v" > /proc/sys/kernel/core_pattern && echo WROTE; '  # noqa: E501
        "grep CapEff /proc/self/status"
    )
    out = await hostile(place, script)
    assert "CapEff:\t0000000000000000" in out and "WROTE" not in out
    assert names(place.home) == [] and names(place.ws) == ["a.txt"]
    assert read("/proc/sys/kernel/core_pattern") == before
