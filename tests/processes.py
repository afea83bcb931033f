"""Processes as the host sees them in ``/proc``, and waiting for what must happen.

A pid a command prints means nothing out here when it runs in a PID namespace of its own
(bubblewrap), so tests find a command's processes by a marker in their command line: a
``sleep`` argument no other process has.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def _stat(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, parent pid, ...);
    None once the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def alive(pid: int) -> bool:
    """Running and not a zombie (a zombie waits for a reaper, it runs nothing)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def sleep_marker(seconds: int = 1000) -> str:
    """A ``sleep`` argument of about ``seconds`` that no other process has."""
    return f"{seconds}.{secrets.randbelow(10**9):09d}"


def _live_with(matches: Callable[[bytes], bool]) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if matches((proc / "cmdline").read_bytes()) and alive(int(proc.name)):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def children(pid: int) -> list[int]:
    """Pids of the live processes whose parent is ``pid``."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and (fields := _stat(proc.name)) is not None:
            state, parent = fields[:2]
            if parent == str(pid) and state != "Z":
                found.append(int(proc.name))
    return found


def host_pids(*argv: str) -> list[int]:
    """Pids of the live processes whose command line is exactly ``argv``."""
    wanted = "\0".join(argv).encode() + b"\0"
    return _live_with(lambda cmdline: cmdline == wanted)


def processes_with(marker: str) -> list[int]:
    """Pids of the live processes whose command line holds ``marker`` (a command's shell, its
    sleep, the supervisor or bwrap running it)."""
    wanted = marker.encode()
    return _live_with(lambda cmdline: wanted in cmdline)


async def until(
    predicate: Callable[[], T], within: float = 20.0, *, report: Callable[[], object] | None = None
) -> T:
    """Wait until ``predicate()`` is truthy, and return it: for something that must happen
    (``within`` only bounds how long a failing test takes; ``report()``, if given, says what
    was seen instead). Asked every 10 ms, or five times its own duration apart when it takes
    longer (a scan of ``/proc`` takes 5-25 ms beside CI's other processes): a wait never costs
    more than a sixth of a core."""
    deadline = time.monotonic() + within
    while True:
        asked = time.monotonic()
        if value := predicate():
            return value
        now = time.monotonic()
        if now > deadline:
            seen = "" if report is None else f"\n{report()}"
            raise AssertionError(f"it never happened within {within:g} s{seen}")
        await asyncio.sleep(max(0.01, 5 * (now - asked)))
