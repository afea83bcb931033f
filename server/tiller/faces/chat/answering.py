"""Which line answers a question in ``tiller chat`` (pure).

A question never takes the keys from the prompt: it is shown above it, and a line sent with
Enter answers it only when the line was typed after the question was drawn and names one of its
choices alone (its key or one of its words, any case; a choice that asks for feedback takes the
rest of the line as the feedback). So keys typed before the question appeared, and the first
letter of a sentence in progress (``any news``, ``yellow``), never answer: that line stays the
user's prompt. A line typed under the question that names no choice is kept with a reminder;
Enter again sends it as a prompt (a slash command or a ``>`` steer is sent at once).

Why not one key, as Claude Code and codex answer: their users report the same accident (a
letter or Enter of the next prompt taken as the answer: anthropics/claude-code#87053, still
open; openai/codex#18207), and codex's fix holds the question back for a second of idle keys
(openai/codex#19513), which a pause between two words outlasts (openai/codex#27374). A line
typed after the question, sent with Enter, is what ``tiller run`` already reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from tiller.faces.client.questions import Choice, Question
from tiller.faces.common.render import shorten

NEVER_ANSWERS: Final = ("/", ">")  # a slash command, a steer: sent as they are


@dataclass(frozen=True)
class Unseen:
    """Not drawn yet: what is typed now was typed before the user could see the question."""


@dataclass(frozen=True)
class Draft:
    """Drawn while the prompt held a line typed before it: that line is a prompt (Enter sends
    it); once it is sent or cleared, a line answers."""


@dataclass(frozen=True)
class Answering:
    """Drawn, and the prompt line typed under it. ``refused``: a line that named no choice,
    kept with a reminder; Enter again sends it as a prompt."""

    refused: str | None = None


LineState = Unseen | Draft | Answering


@dataclass(frozen=True)
class Picked:
    """The line names a choice; ``feedback`` is what followed its word."""

    choice: Choice
    feedback: str


@dataclass(frozen=True)
class Refused:
    """Typed under the question, it names no choice: kept, with a reminder."""

    line: str


@dataclass(frozen=True)
class Prompt:
    """Not for the question: the line is sent as a prompt."""


Verdict = Picked | Refused | Prompt


def drawn(state: LineState, line: str) -> LineState:
    """The question is on screen and the prompt holds ``line``."""
    match state:
        case Unseen():
            return Draft() if line else Answering()
        case _:
            return state


def edited(state: LineState, line: str) -> LineState:
    """The prompt now holds ``line`` (typed, cleared or sent)."""
    match state:
        case Draft() if not line:
            return Answering()
        case Answering(refused=str(refused)) if line != refused:
            return Answering()
        case _:
            return state


def on_enter(question: Question, state: LineState, line: str) -> Verdict:
    """What Enter does with the prompt's ``line`` while ``question`` is shown."""
    match state:
        case Answering(refused=refused) if line != refused and not line.startswith(NEVER_ANSWERS):
            found = named_choice(question, line)
            return Refused(line) if found is None else found
        case _:
            return Prompt()


def named_choice(question: Question, line: str) -> Picked | None:
    """The choice ``line`` names alone (a choice that asks for feedback may carry it)."""
    found = question.from_line(line)
    if found is None or (found.feedback and not found.choice.asks_feedback):
        return None
    return Picked(found.choice, found.feedback)


def hint(question: Question, state: LineState) -> str:
    """The line under the choices: how to answer from where the prompt is."""
    keys = question.keys_text()
    match state:
        case Draft():
            return (
                "your line stays a prompt (Enter sends it; Ctrl-C sets it aside, ↑ brings it "
                f"back); then type {keys} and Enter"
            )
        case Answering(refused=str(refused)):
            return (
                f"“{shorten(refused, 40)}” is not an answer: type {keys} and Enter "
                "(Enter again sends the line as a prompt)"
            )
        case _:
            return f"type {keys} and Enter"
