"""A private place for a warm template (``tiller.warm``), for tests that start one.

`WarmPlace` is a runtime dir of the test's own (``XDG_RUNTIME_DIR``, mode 0700, short: a
Unix socket path has at most 107 bytes), the template that serves it found by its command
line, and its end: every template started for it is stopped when the test is done.

`SUITE` is the test process's own (``tests/e2e/conftest.py`` starts its template with the
session): `fork_server` gives the harness its servers from it (``tests/harness.py``), as the
product gives them to ``tiller run``: each a fork of a process that has imported Tiller and
the SDK already, which on a 2-core machine saves most of the suite's time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import tempfile
from pathlib import Path

from processes import processes_with, until
from tiller.faces.forked.client import ForkedProcess, start_forked, start_template
from tiller.faces.forked.place import Place

STREAM_LIMIT = 1 << 24


class WarmPlace:
    def __init__(self, idle_seconds: float = 120.0) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="tw-", dir="/tmp"))
        self.root.chmod(0o700)
        self.place = Place.find({"XDG_RUNTIME_DIR": str(self.root)})
        self.idle_seconds = idle_seconds

    def env(self, **extra: str) -> dict[str, str]:
        """This process's environment (no ``ANTHROPIC_*``/``TILLER_*``) pointed at this place,
        and ``extra``."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "TILLER_"))}
        env["XDG_RUNTIME_DIR"] = str(self.root)
        env["TILLER_WARM_IDLE_SECONDS"] = f"{self.idle_seconds:g}"
        env.update(extra)
        return env

    def templates(self) -> list[int]:
        """The live templates of this place (their command line names its folder). A server
        forked from a template keeps its command line: a process whose parent is one of them
        is such a server, not a template. One that ends between the scan and the look at its
        parent (an earlier test's server, under load) has no parent left to tell: it is not
        counted (it was taken for a second template)."""
        found = self.processes()
        not_a_template_parent = {None, *found}
        return [pid for pid in found if parent_of(pid) not in not_a_template_parent]

    def processes(self) -> list[int]:
        """Its templates and the servers forked from them (alive or left by a dead template)."""
        return processes_with(f"tiller.warm.template\0{self.place.directory}\0")

    def connectable(self) -> bool:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as probe:
            try:
                probe.connect(str(self.place.socket))
            except OSError:
                return False
        return True

    async def ready(self) -> int:
        """Wait until a template serves the place; its pid."""
        await until(self.connectable, 60)
        pids: list[int] = await until(self.templates)
        assert len(pids) == 1, pids
        return pids[0]

    def stop(self) -> list[int]:
        """SIGTERM to its templates (their servers go on); the pids signalled."""
        pids = self.templates()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        return pids

    async def close(self) -> None:
        """Every process of the place ends: templates and the servers forked from them."""
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        await until(lambda: not self.processes())
        shutil.rmtree(self.root, ignore_errors=True)


SUITE: WarmPlace | None = None


def start_suite() -> WarmPlace:
    """The test process's place, with its template starting now (warming up meanwhile)."""
    global SUITE
    SUITE = WarmPlace(idle_seconds=900)
    start_template(SUITE.place, SUITE.env())
    return SUITE


def suite() -> WarmPlace:
    """The test process's place (for a test that needs its template's pid: ``ready``)."""
    if SUITE is None:
        raise RuntimeError("no suite template: tests/e2e/conftest.py starts it")
    return SUITE


async def fork_server(env: dict[str, str]) -> ForkedProcess:
    """A server forked from the test process's template (waiting until it is warm)."""
    if SUITE is None:
        raise RuntimeError("no suite template: tests/e2e/conftest.py starts it")
    # Its socket answering is enough (``ready`` also finds its pid in /proc: a scan of every
    # process's command line, for each of the suite's thousand servers).
    await until(SUITE.connectable, 60)
    forked = await start_forked([], env, STREAM_LIMIT, SUITE.place)
    if forked is None:
        raise RuntimeError(f"the warm template did not fork (see {SUITE.place.log})")
    return forked


def parent_of(pid: int) -> int | None:
    """The parent pid of a live process (None once it is gone)."""
    try:
        return int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None
