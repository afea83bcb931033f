"""Telling a user who looked away that the agent needs an answer or has finished.

``bell`` (the default) rings the terminal's bell (``BEL``): terminals and tmux mark the tab or
window; ``osc9`` sends ``OSC 9`` (a desktop notification in iTerm2, WezTerm, kitty, Windows
Terminal, ...) with the message; ``off`` says nothing. Set with ``tiller chat --notify`` or
``$TILLER_NOTIFY``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from tiller.faces.common.render import terminal_safe
from tiller.jsontypes import JSON

NotifyStyle = Literal["bell", "osc9", "off"]
NOTIFY_STYLES: Final[tuple[str, ...]] = get_args(NotifyStyle)

Request = Callable[[Any], Awaitable[JSON]]
Notification = Callable[[Any], None]


def signal_text(style: NotifyStyle, message: str) -> str:
    """What is written to the terminal for ``message``."""
    match style:
        case "bell":
            return "\a"
        case "osc9":  # control characters would end the sequence early: made visible
            return f"\x1b]9;{terminal_safe(message).replace(chr(7), '')}\x07"
        case "off":
            return ""


@dataclass(frozen=True)
class Notifier:
    style: NotifyStyle
    write: Callable[[str], None]  # raw to the terminal

    def say(self, message: str) -> None:
        text = signal_text(self.style, message)
        if text:
            self.write(text)

    def asking(self, what: str, handler: Request) -> Request:
        """``handler`` of a server question, announced first ("needs your answer")."""

        async def asked(params: Any) -> JSON:
            self.say(f"Tiller needs your answer: {what}")
            return await handler(params)

        return asked

    def watching(self, handler: Notification) -> Notification:
        """``handler`` of ``tiller/event``; a turn that ends is announced ("turn finished")."""

        def on_event(params: Any) -> None:
            handler(params)
            if isinstance(params, dict) and params.get("type") == "turnEnded":
                self.say(f"Tiller: turn {params.get('outcome', 'ended')}")

        return on_event
