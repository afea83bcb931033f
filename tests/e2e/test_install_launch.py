"""The README's main command as a newcomer runs it (issue 36): `scripts/launch.sh FOLDER`, in
a copy of this checkout and with a HOME of its own, sets up, builds, and reaches the code-server
URL it prints; VS Code's Workspace Trust stays on for the folder it was given; and no
code-server run writes ~/.config/code-server.

The copy shares this user's caches (XDG_CACHE_HOME: the code-server and npm stores, uv's
cache), so nothing is compiled again: that code-server's install itself works from an empty
cache in a fresh HOME is vscode-extension/scripts/check-fresh-install.sh's (a phase of
scripts/test.sh). Not in this checkout: the extension's phase builds and tests here meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from processes import alive, children

REPO = Path(__file__).resolve().parents[2]
BANNER = "Tiller is running in code-server"


def copy_of_checkout(to: Path) -> Path:
    """The checkout's files as they are now (tracked and new, not ignored ones: no .venv,
    node_modules or build output), as a fresh clone would have them."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for name in filter(None, (entry.decode() for entry in listed)):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree is not copied
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)
    return to


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def descendants(pid: int) -> list[int]:
    found = []
    for child in children(pid):
        found += [child, *descendants(child)]
    return found


@dataclass(frozen=True)
class Launched:
    checkout: Path
    home: Path
    folder: Path
    port: int
    pid: int
    output: str  # what launch.sh printed, up to and with its banner


@pytest.fixture
async def launched(tmp_path: Path) -> AsyncIterator[Launched]:
    """`scripts/launch.sh FOLDER` in a copy of the checkout with a fresh HOME, once its banner
    is out; stopped (its whole process group) at the end."""
    checkout = copy_of_checkout(tmp_path / "checkout")
    home = tmp_path / "home"
    folder = tmp_path / "project"
    for made in (home, folder):
        made.mkdir()
    (folder / "README.md").write_text("# a project someone cloned\n")
    real_cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("ANTHROPIC_", "TILLER_", "XDG_", "npm_config_", "CODE_SERVER"))
    }
    env.update(HOME=str(home), XDG_CACHE_HOME=real_cache, PORT=str(port := free_port()))
    if shutil.which("code", path=env.get("PATH")):
        pytest.skip("VS Code's `code` is on PATH: launch.sh would open it instead of code-server")
    process = await asyncio.create_subprocess_exec(
        str(checkout / "scripts" / "launch.sh"),
        str(folder),
        cwd=checkout,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(840):
            while BANNER not in "".join(lines[-20:]):
                line = await process.stdout.readline()
                assert line, "launch.sh ended before its banner:\n" + "".join(lines)
                lines.append(line.decode(errors="replace"))
            while not lines[-1].startswith("====="):  # the rest of the banner
                line = await process.stdout.readline()
                assert line, "launch.sh ended in its banner:\n" + "".join(lines)
                lines.append(line.decode(errors="replace"))
        yield Launched(checkout, home, folder, port, process.pid, "".join(lines))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)  # launch.sh stops code-server on TERM
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            os.killpg(process.pid, signal.SIGKILL)
            await process.wait()


@pytest.mark.timeout(900)
async def test_launch_on_a_fresh_home_serves_the_named_folder_with_trust_on(
    launched: Launched,
) -> None:
    # The main job's Debian packages: the server's and code-server's build, not the tests'.
    assert "== Debian packages (server code-server)" in launched.output, launched.output
    url = f"http://127.0.0.1:{launched.port}/?folder={launched.folder}"
    assert url in launched.output, launched.output
    assert "Workspace Trust: on" in launched.output, launched.output
    with await asyncio.to_thread(urllib.request.urlopen, url, timeout=30) as page:
        assert page.status == 200
        assert b"vscode" in (await asyncio.to_thread(page.read)).lower()

    # code-server runs with trust on: no switch on its command line, none in its settings.
    running = [cmdline(pid) for pid in descendants(launched.pid) if alive(pid)]
    assert any("--bind-addr" in argv for argv in running), running
    assert not any("--disable-workspace-trust" in argv for argv in running), running
    profile = launched.checkout / "vscode-extension" / ".e2e-cache" / "launch"
    settings = (profile / "user-data" / "User" / "settings.json").read_text()
    assert "security.workspace.trust" not in settings, settings

    # Every code-server run (its version, the extension's install, the server) had a config
    # file of its own: the user's code-server folder is never made.
    assert not (launched.home / ".config" / "code-server").exists()
    assert (profile / "config.yaml").read_text().startswith(f"bind-addr: 127.0.0.1:{launched.port}")
