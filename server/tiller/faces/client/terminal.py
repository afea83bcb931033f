"""The terminal as the plain clients use it: output on stdout and stderr, lines of input."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from typing import TextIO

from tiller.faces.common.render import DIM, RESET
from tiller.proc_stat import STATE, TPGID, TTY_NR, stat_fields

FOREGROUND_POLL_SECONDS = 0.1  # how often a fork reading for a background job looks again
_job_group: int | None = None  # set once, in a fork that runs a client's command


def read_for_job(group: int) -> None:
    """This process reads the terminal for the shell's job ``group``: it is a fork of the warm
    template running a client's command (``tiller run``), in a session of its own, so the
    terminal is not its controlling terminal and the kernel would let it read while the job
    is in the background, taking what the user types at the shell."""
    global _job_group
    _job_group = group


def _wait_for_the_foreground(fd: int) -> None:
    """What the kernel does to a background job that reads its terminal, for the job this
    process reads for: the job is stopped (SIGTTIN: the shell says "Stopped (tty input)"), and
    the read waits until the job is in the foreground again (``fg``); a job continued in the
    background (``bg``) is stopped again. Returns at once for a process reading its own
    terminal (the kernel does this for it) or something that is not a terminal."""
    group = _job_group
    if group is None or not os.isatty(fd):
        return
    while True:
        # Stopped or not is read first: ``fg`` gives the job the terminal before it continues
        # it, so a job seen stopped and then not in the foreground is waiting for ``fg``, and a
        # job seen running and not in the foreground was continued in the background. Read
        # the other way round, a SIGTTIN could land just after ``fg`` and stop the job again.
        stopped = _stopped(group)
        foreground = _foreground_of(group, fd)
        if stopped is None or foreground is None or foreground == group:
            return
        if not stopped:  # continued in the background (``bg``): stopped again, as the kernel would
            try:
                os.killpg(group, signal.SIGTTIN)
            except (ProcessLookupError, PermissionError):
                return  # the job is gone: nothing to wait for
        time.sleep(FOREGROUND_POLL_SECONDS)


def _stopped(group: int) -> bool | None:
    """Whether the job's leader is stopped; None when it is gone or there is no ``/proc``."""
    try:
        return stat_fields(group)[STATE] == b"T"
    except (OSError, IndexError):
        return None


def _foreground_of(group: int, fd: int) -> int | None:
    """The foreground process group of the terminal ``fd``, as the job's leader sees it as
    its controlling terminal (``tty_nr`` and ``tpgid`` in ``/proc/PID/stat``: ``tcgetpgrp``
    answers only for the caller's own terminal). None when that cannot be told: the leader
    is gone, has no controlling terminal or another one (no job control then), no ``/proc``."""
    try:
        fields = stat_fields(group)
        tty, foreground = int(fields[TTY_NR]), int(fields[TPGID])
        device = os.fstat(fd).st_rdev
    except (OSError, IndexError, ValueError):
        return None
    # ``tty_nr`` packs major and minor as glibc's ``dev_t`` does below 2**32, so os.major and
    # os.minor decode both
    same = (os.major(tty), os.minor(tty)) == (os.major(device), os.minor(device))
    if not same or foreground <= 0:
        return None
    return foreground


def write_flushed(stream: TextIO, text: str) -> None:
    """Write ``text`` and flush it. Once the reader is gone (``tiller run ... | head``), what
    follows goes to ``/dev/null``: the turn goes on and ends as it would, with no traceback
    per line."""
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


class Output:
    """stdout for the answer and the tool log, stderr for everything else."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self.out_tty = out.isatty()
        self.err_tty = err.isatty()
        self._at_line_start = True

    def write(self, text: str) -> None:
        if text:
            write_flushed(self.out, text)
            self._at_line_start = text.endswith("\n")

    def line(self, text: str) -> None:
        self.end_line()
        self.write(text + "\n")

    def end_line(self) -> None:
        if not self._at_line_start:
            self.write("\n")

    def info(self, text: str) -> None:
        """A line on stderr; on a shared terminal, first finish the answer's open line."""
        if self.out_tty:
            self.end_line()
        write_flushed(self.err, text + "\n")

    def dim(self, text: str) -> str:
        return f"{DIM}{text}{RESET}" if self.out_tty else text


class TerminalInput:
    """Lines from the terminal, read in a daemon thread so the event loop never blocks.

    A read in flight survives a withdrawn question and serves the next one. The thread is a
    daemon reading the raw file descriptor: an executor thread (``asyncio.to_thread``) blocked
    in ``input()`` would keep the process from exiting until the user pressed Enter.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._wanted = threading.Semaphore(0)
        self._lines: asyncio.Queue[str | None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._requested = False
        self._eof = False

    async def readline(self) -> str | None:
        """The next line without its newline; ``None`` at end of input."""
        if self._eof:
            return None
        if self._lines is None or self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._lines = asyncio.Queue()
        if not self._requested:
            self._requested = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tiller-stdin", daemon=True)
                self._thread.start()
            self._wanted.release()
        line = await self._lines.get()
        self._requested = False
        if line is None:
            self._eof = True
        return line

    def _run(self) -> None:
        while True:
            self._wanted.acquire()
            line = self._read_line()
            assert self._loop is not None and self._lines is not None
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                self._loop.call_soon_threadsafe(self._lines.put_nowait, line)
            if line is None:
                return

    def _read_line(self) -> str | None:
        _wait_for_the_foreground(self._fd)
        data = bytearray()
        while not data.endswith(b"\n"):
            try:
                chunk = os.read(self._fd, 1)
            except OSError:
                chunk = b""
            if not chunk:
                return data.decode(errors="replace") if data else None
            data += chunk
        return data[:-1].decode(errors="replace").rstrip("\r")
