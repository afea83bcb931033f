"""The server's questions in the shell, shown one at a time above the prompt.

A question never takes the keys: the prompt keeps them, and a line sent with Enter answers the
question only when it was typed after the question was drawn and names one of its choices
(``answering``). A choice that asks for feedback takes a line of it first, on a line of its own
that does take the keys (Esc goes back to the choices).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prompt_toolkit.buffer import Buffer
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.layout import FormattedTextControl, Window

from tiller.faces.chat import answering
from tiller.faces.chat.answering import LineState, Picked, Prompt, Refused, Unseen, Verdict
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
    """A question on screen; ``feedback_for`` is the choice whose feedback is being typed;
    ``line`` where the prompt's line stands for it (``answering``); ``on_escape`` the answer
    Esc gives a question of the chat's own (None: Esc interrupts the turn, as ever)."""

    question: Question
    answer: asyncio.Future[JSON]
    on_escape: JSON | None = None
    feedback_for: Choice | None = None
    line: LineState = field(default_factory=Unseen)


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
            FormattedTextControl(self._question), wrap_lines=True, dont_extend_height=True
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

    async def ask(self, question: Question, on_escape: JSON | None = None) -> JSON:
        """``question``'s answer; ``on_escape``: what Esc answers (a question of the chat's
        own; the server's are withdrawn by the interrupt Esc sends)."""
        await self.printer.drain()  # the preview or plan first, then the question under it
        asking = Asking(question, asyncio.get_running_loop().create_future(), on_escape)
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

    # --- the user's lines --------------------------------------------------------------------

    def choosing(self) -> bool:
        """A question waits for a line naming a choice."""
        return bool(self.asking) and self.asking[0].feedback_for is None

    def typing_feedback(self) -> bool:
        return bool(self.asking) and self.asking[0].feedback_for is not None

    def focus(self) -> Buffer | None:
        """What has the focus while questions are shown; ``None``: the prompt."""
        if not self.asking or self.asking[0].feedback_for is None:
            return None
        return self.feedback

    def drawn(self, line: str) -> None:
        """The screen was drawn with the prompt holding ``line``: the question in front is
        seen from now on."""
        self._move_line(answering.drawn, line)

    def edited(self, line: str) -> None:
        """The prompt holds ``line`` now (typed, cleared or sent)."""
        self._move_line(answering.edited, line)

    def _move_line(self, move: Callable[[LineState, str], LineState], line: str) -> None:
        if self.choosing():
            asking = self.asking[0]
            moved = move(asking.line, line)
            if moved != asking.line:
                asking.line = moved
                self.changed()

    def take_line(self, line: str) -> Verdict:
        """Enter on the prompt's ``line``: the question in front takes it (``Picked``: the
        answer, or the choice's feedback line opens; ``Refused``: kept, with a reminder), or
        it is a prompt."""
        if not self.choosing():
            return Prompt()
        asking = self.asking[0]
        verdict = answering.on_enter(asking.question, asking.line, line)
        match verdict:
            case Picked(choice=choice, feedback=feedback):
                if choice.asks_feedback and not feedback:
                    asking.feedback_for = choice
                    self.feedback.reset()
                    self.changed()
                elif not asking.answer.done():
                    self._answer(asking, choice.answered(feedback))
            case Refused(line=refused):
                asking.line = answering.Answering(refused)
                self.changed()
            case Prompt():
                pass
        return verdict

    def escape(self) -> bool:
        """Esc: whether it answered a question of the chat's own."""
        if not self.asking or (answer := self.asking[0].on_escape) is None:
            return False
        asking = self.asking[0]
        if not asking.answer.done():
            self._answer(asking, answer)
        return True

    def send_feedback(self) -> None:
        if not self.asking or self.asking[0].feedback_for is None:
            return
        asking = self.asking[0]
        assert asking.feedback_for is not None
        if not asking.answer.done():
            self._answer(asking, asking.feedback_for.answered(self.feedback.text))
        self.feedback.reset()

    def _answer(self, asking: Asking, answer: JSON) -> None:
        """The answer, and the question gone at once, with the focus back on the prompt."""
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
        if asking.feedback_for is not None:
            return [
                ("class:question", asking.question.title + "\n"),
                ("class:choices", FEEDBACK_HINT),
            ]
        return [
            ("class:question", asking.question.title + "\n"),
            ("class:choices", asking.question.prompt_line() + "\n"),
            ("class:hint", answering.hint(asking.question, asking.line)),
        ]
