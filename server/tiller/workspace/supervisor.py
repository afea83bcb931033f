"""A tiny supervisor between the server and each command: every process the command starts
ends with the command, and all of them die with the server, even after ``kill -9``.

Run as ``python -I -S supervisor.py PARENT_PID STATUS_FD ARGV...`` (stdlib only, no tiller
import, so it starts fast). PARENT_PID is the pid its parent must have: the server's, or 1
when it runs inside a PID namespace of its own (an approved command under bubblewrap: bwrap's
init is its parent there, and bwrap dies with the server). It

- becomes a child subreaper: processes that leave their parent (``setsid cmd &``, double
  forks) are re-parented to it instead of to init, so it always sees all of them;
- asks the kernel for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``), and exits at once
  if the parent is already gone;
- runs ARGV; when ARGV ends, or on SIGTERM/SIGINT/SIGHUP, it stops every descendant
  (SIGTERM, a short grace, then SIGKILL until none is left) and reaps them;
- writes ``EXIT STOPPED`` to STATUS_FD (EXIT: the exit code, or minus the signal; STOPPED:
  how many processes were still running when ARGV ended) and exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from types import FrameType

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
GRACE_SECONDS = 0.5
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
REAPED: dict[int, int] = {}  # pid -> wait status of every child collected so far


def _descendants(root: int) -> list[int]:
    """Pids below ``root`` in the process tree, from /proc (parents before children)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):  # gone meanwhile
            os.kill(pid, sig)


def _reap() -> None:
    """Collect every child that has ended, without blocking."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        REAPED[pid] = status


def stop_all(me: int) -> None:
    """SIGTERM every descendant, wait a little, then SIGKILL until none is left."""
    pids = _descendants(me)
    if not pids:
        return
    _signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    while time.monotonic() < deadline:
        _reap()
        if not _descendants(me):
            return
        time.sleep(0.02)
    for _ in range(200):  # a fork bomb may spawn while we kill: sweep until empty
        pids = _descendants(me)
        if not pids:
            break
        _signal_all(pids, signal.SIGKILL)
        time.sleep(0.005)
        _reap()
    _reap()


def main(argv: list[str]) -> int:
    parent, status_fd, command = int(argv[0]), int(argv[1]), argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        return 1  # the parent died before we asked to be told
    me = os.getpid()
    stopping: list[int] = []

    def on_stop(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)
        stop_all(me)

    for sig in STOP_SIGNALS:
        signal.signal(sig, on_stop)
    child = os.fork()
    if child == 0:
        try:
            for sig in STOP_SIGNALS:
                signal.signal(sig, signal.SIG_DFL)
            if status_fd >= 0:
                os.close(status_fd)
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    # The command's output is its own: do not hold the pipe open after it ends.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    while child not in REAPED:  # (a stop signal's handler may reap it first)
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        REAPED[pid] = status
    left = len(_descendants(me))
    stop_all(me)
    ended = REAPED.get(child)
    code = -signal.SIGKILL if ended is None else os.waitstatus_to_exitcode(ended)
    if status_fd >= 0:  # -1: an outer supervisor, whose report nobody reads
        os.write(status_fd, f"{code} {left if not stopping else 0}\n".encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
