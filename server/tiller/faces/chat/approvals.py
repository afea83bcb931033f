"""The server's questions in the shell, shown one at a time under the live area.

While a question is shown it has the focus: a key picks one of its choices or does nothing
at all (``client.questions``); a choice that asks for feedback takes a line of it first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prompt_toolkit.buffer import Buffer
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.layout import FormattedTextControl, Window

from tiller.faces.chat.events import EventLog
from tiller.faces.chat.printer import Printer
from tiller.faces.client.questions import (
    Choice,
    Question,
    checkpoint_question,
    confirm_question,
    plan_question,
)
from tiller.faces.common.children import asker
from tiller.faces.common.render import DIM, preview_text, terminal_safe
from tiller.jsontypes import JSON

FEEDBACK_HINT = "feedback for the agent (Enter sends, empty for none; Esc goes back)"


@dataclass
class Asking:
    """A question on screen; ``feedback_for`` is the choice whose feedback is being typed."""

    question: Question
    answer: asyncio.Future[JSON]
    feedback_for: Choice | None = None
    missed: str | None = None  # the last key that was not a choice, shown with a reminder


class Approvals:
    """``changed`` moves the focus where the questions now want it; ``columns`` is the
    terminal's width (a plan is rendered to it)."""

    def __init__(
        self,
        printer: Printer,
        events: EventLog,
        changed: Callable[[], None],
        columns: Callable[[], int],
    ) -> None:
        self.printer = printer
        self.events = events
        self.changed = changed
        self.columns = columns
        self.asking: list[Asking] = []
        self.feedback = Buffer(multiline=False)
        self.window = Window(
            FormattedTextControl(self._question, focusable=True),
            wrap_lines=True,
            dont_extend_height=True,
        )

    # --- the server's requests ---------------------------------------------------------------

    async def confirm_tool(self, params: Any) -> JSON:
        params = params if isinstance(params, dict) else {}
        self.events.end_partial()
        preview = params.get("preview")
        if isinstance(preview, dict):
            preview = {k: terminal_safe(v) if isinstance(v, str) else v for k, v in preview.items()}
        name = terminal_safe(asker(params))
        self.printer.line(preview_text(name, preview, color=True))
        return await self.ask(confirm_question(params))  # the answer: a confirmDecided event

    async def approve_plan(self, params: Any) -> JSON:
        """The plan itself was printed from the ``planRequested`` event before this."""
        self.events.end_partial()
        return await self.ask(plan_question(params if isinstance(params, dict) else {}))

    async def checkpoint(self, params: Any) -> JSON:
        self.events.end_partial()
        return await self.ask(checkpoint_question(params))

    async def ask(self, question: Question) -> JSON:
        await self.printer.drain()  # the preview or plan first, then the question under it
        asking = Asking(question, asyncio.get_running_loop().create_future())
        self.asking.append(asking)
        self.changed()
        try:
            return await asking.answer
        except asyncio.CancelledError:
            self.printer.print("· the question was withdrawn", DIM)
            raise
        finally:
            if asking in self.asking:  # not answered: withdrawn, or the chat ends
                self.asking.remove(asking)
                self.changed()

    # --- the user's keys ---------------------------------------------------------------------

    def choosing(self) -> bool:
        """A question waits for a key."""
        return bool(self.asking) and self.asking[0].feedback_for is None

    def typing_feedback(self) -> bool:
        return bool(self.asking) and self.asking[0].feedback_for is not None

    def focus(self) -> Window | Buffer | None:
        """What has the focus while questions are shown; ``None``: the prompt."""
        if not self.asking:
            return None
        return self.window if self.asking[0].feedback_for is None else self.feedback

    def choose(self, key: str) -> None:
        """A key pressed while a question is shown: its choice, or nothing at all."""
        if not self.asking:
            return
        asking = self.asking[0]
        choice = asking.question.choice(key.lower())
        if choice is None:  # not an answer: say which keys are
            asking.missed = key if key.isprintable() else repr(key)
            self.changed()
            return
        if choice.asks_feedback:
            asking.feedback_for = choice
            self.feedback.reset()
            self.changed()
        elif not asking.answer.done():
            self._answer(asking, choice.answered())

    def send_feedback(self) -> None:
        if not self.asking or self.asking[0].feedback_for is None:
            return
        asking = self.asking[0]
        assert asking.feedback_for is not None
        if not asking.answer.done():
            self._answer(asking, asking.feedback_for.answered(self.feedback.text))
        self.feedback.reset()

    def _answer(self, asking: Asking, answer: JSON) -> None:
        """The answer, and the question gone at once, with the focus back where it goes: the
        keys typed right behind the answer, read with it, are the prompt's (they were taken
        for missed choices while the question waited for ``ask`` to resume)."""
        asking.answer.set_result(answer)
        self.asking.remove(asking)
        self.changed()

    def back_to_choices(self) -> None:
        if self.asking:
            self.asking[0].feedback_for = None
            self.feedback.reset()
            self.changed()

    def _question(self) -> StyleAndTextTuples:
        if not self.asking:
            return []
        asking = self.asking[0]
        choices = asking.question.prompt_line() if asking.feedback_for is None else FEEDBACK_HINT
        if asking.feedback_for is None and asking.missed is not None:
            reminder = f"{asking.missed} is not a choice: press {asking.question.keys_text()}"
            choices += f"\n{reminder}"
        return [
            ("class:question", asking.question.title + "\n"),
            ("class:choices", choices),
        ]
