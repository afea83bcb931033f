"""Lines printed above the shell's bottom area: in order, batched into few redraws, and made
harmless first (no escape sequences reach the terminal but ours)."""

from __future__ import annotations

import asyncio
import io
import logging
import sys
from collections.abc import Callable
from functools import partial

from prompt_toolkit.application import run_in_terminal

from tiller.faces.common.render import DIM, RESET, terminal_safe

PRINT_BATCH_SECONDS = 0.02


class Printer:
    """``app_running`` says whether the application is on screen (else lines go straight out)."""

    def __init__(self, app_running: Callable[[], bool]) -> None:
        self.app_running = app_running
        self.pending: list[str] = []
        self.task: asyncio.Task[None] | None = None

    def print(self, text: str, style: str = "") -> None:
        """A line above the prompt; whatever came from the server or the model is made
        harmless first."""
        self.print_parts((style, text))

    def print_parts(self, *parts: tuple[str, str]) -> None:
        self.line(
            "".join(
                f"{style}{terminal_safe(text)}{RESET}" if style else terminal_safe(text)
                for style, text in parts
            )
        )

    def line(self, text: str) -> None:
        """A line as it is (ours: already safe)."""
        self.pending.append(text + "\n")
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._drain())

    async def drain(self) -> None:
        if self.task is not None:
            await self.task

    async def _drain(self) -> None:
        while self.pending:
            await asyncio.sleep(PRINT_BATCH_SECONDS)
            chunk = "".join(self.pending)
            self.pending.clear()
            try:
                if not self.app_running():
                    raise RuntimeError("the application is not running")
                await run_in_terminal(partial(_write, chunk), in_executor=False)
            except RuntimeError:  # before it starts, after it ends (or while it ends)
                _write(chunk)


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


class PrinterLog(logging.Handler):
    """The client's own warnings go above the prompt, not across it."""

    def __init__(self, printer: Printer) -> None:
        super().__init__(logging.WARNING)
        self.printer = printer

    def emit(self, record: logging.LogRecord) -> None:
        self.printer.line(f"{DIM}· {terminal_safe(self.format(record))}{RESET}")


def markdown_ansi(text: str, width: int) -> str:
    """Markdown rendered for the terminal by rich (loaded only when a plan comes)."""
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console(file=io.StringIO(), force_terminal=True, width=max(20, width))
    console.print(Markdown(text))
    out = console.file
    assert isinstance(out, io.StringIO)
    return out.getvalue().rstrip("\n")
