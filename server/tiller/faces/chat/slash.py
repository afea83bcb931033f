"""Slash commands in ``tiller chat``: Tab completes a command's name (built-in or custom, as
``tiller/listCommands`` lists them, and the chat's own ``/exit``, ``/quit``) and a hint row
lists the ones that match what is typed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from tiller.jsontypes import JSON

MAX_HINTS = 6
QUIT_COMMANDS: Final = ("/exit", "/quit")
OWN: Final[tuple[JSON, ...]] = tuple(
    {"name": name[1:], "description": "leave the chat (says how to resume)", "source": "built-in"}
    for name in QUIT_COMMANDS
)  # the chat's own, beside the server's


class SlashCommands(Completer):
    """The commands the server listed last (replaced whole when it lists them again)."""

    def __init__(self) -> None:
        self.commands: list[JSON] = []

    def matching(self, text: str) -> list[JSON]:
        """The commands whose ``/name`` starts with ``text`` (a ``/word`` with no space)."""
        if not text.startswith("/") or " " in text or "\n" in text:
            return []
        return [c for c in (*self.commands, *OWN) if f"/{c.get('name', '')}".startswith(text)]

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        text = document.text_before_cursor
        for command in self.matching(text):
            name = f"/{command['name']}"
            yield Completion(name, -len(text), display_meta=str(command.get("description", "")))

    def hints(self, text: str) -> list[tuple[str, str]]:
        """Rows for the hint area: ``/name hint — description`` of the matching commands."""
        found = self.matching(text)
        rows = []
        for command in found[:MAX_HINTS]:
            hint = f" {command['argumentHint']}" if command.get("argumentHint") else ""
            source = "" if command.get("source") == "built-in" else " (custom)"
            rows.append(
                ("class:hint", f"/{command['name']}{hint} — {command.get('description', '')}"
                 f"{source}")
            )  # fmt: skip
        if len(found) > MAX_HINTS:
            rows.append(("class:hint", f"… {len(found) - MAX_HINTS} more (Tab cycles)"))
        return rows
