"""``tiller chat``: the resident terminal shell, a client of the same server as ``tiller run``.

On a terminal it is a prompt_toolkit application (``shell.py``); when stdout is not a terminal
each line of stdin is a prompt and the output is ``tiller run``'s plain format.
"""

from __future__ import annotations

import asyncio
import sys

from tiller.faces.client.headless import run_prompts
from tiller.faces.client.options import ChatOptions
from tiller.faces.client.terminal import TerminalInput

CHAT_HINT = "run tiller chat on a terminal to answer, or `tiller run --yes PROMPT`"
"""``tiller chat`` has no ``--yes``: what to do instead when nobody can answer."""


def run_chat(options: ChatOptions) -> int:
    if not _is_tty(sys.stdout) or not _is_tty(sys.stdin):
        return asyncio.run(run_plain(options))
    from tiller.faces.chat.shell import ChatShell

    return asyncio.run(ChatShell(options).run())


async def run_plain(options: ChatOptions) -> int:
    """Prompts from stdin lines; questions are asked on the same input when it is a terminal."""
    lines = TerminalInput(sys.stdin.fileno())

    async def next_prompt() -> str | None:
        while (line := await lines.readline()) is not None:
            if line.strip():
                return line
        return None

    terminal = lines if _is_tty(sys.stdin) else None
    return await run_prompts(
        next_prompt,
        options.workspace,
        options.initialization_options,
        yes=False,
        terminal=terminal,
        resume=options.resume,
        yes_hint=CHAT_HINT,
        add_dirs=options.add_dirs,
    )


def _is_tty(stream: object) -> bool:
    try:
        return bool(getattr(stream, "isatty", lambda: False)())
    except (ValueError, OSError):
        return False
