"""The shell's bottom area: what it stacks (live lines, the question, the prompt or the
feedback line, the status line), its style and its keys. A question shown above the prompt
leaves the keys to it (``answering``): only the feedback line takes them from the prompt."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.filters import Always, Condition, Filter
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import (
    ConditionalContainer,
    Dimension,
    Float,
    FloatContainer,
    FormattedTextControl,
    HSplit,
    Layout,
    VSplit,
    Window,
)
from prompt_toolkit.layout.controls import BufferControl
from prompt_toolkit.layout.menus import CompletionsMenu
from prompt_toolkit.styles import Style

from tiller.faces.chat.approvals import Approvals
from tiller.faces.chat.events import EventLog, Fragment

ESCAPE_WAIT_SECONDS = 0.05

STYLE = Style.from_dict(
    {
        "toolbar": "reverse",
        "prompt": "bold",
        "thinking": "fg:ansibrightblack italic",
        "running": "fg:ansibrightblack",
        "output": "fg:ansibrightblack",
        "queued": "fg:ansicyan",
        "question": "bold fg:ansiyellow",
        "choices": "fg:ansiyellow",
        "hint": "fg:ansibrightblack",
    }
)


class Shell(Protocol):
    """What the screen shows and what its keys do."""

    @property
    def input(self) -> Buffer: ...
    @property
    def events(self) -> EventLog: ...
    @property
    def approvals(self) -> Approvals: ...
    def live_lines(self) -> list[Fragment]: ...
    def slash_hints(self) -> list[Fragment]: ...
    def submit(self) -> None: ...
    def cycle_mode(self) -> None: ...
    def interrupt(self) -> None: ...
    def ctrl_c(self) -> None: ...
    def quit_now(self) -> None: ...


def build_app(shell: Shell) -> Application[int]:
    approvals = shell.approvals
    typing_feedback = Condition(approvals.typing_feedback)
    composing = ~typing_feedback  # a question shown above leaves the keys to the prompt
    # No row is filled to the edge (no rule, no toolbar background, an empty last column):
    # terminals that reflow on resize (tmux, most modern ones) split a row longer than the
    # new width in two, and the redraw would leave a stale copy of it behind.
    # The @path completions (completion.py) open under the cursor.
    menu = Float(xcursor=True, ycursor=True, content=CompletionsMenu(max_height=8))
    frame = _frame(shell, typing_feedback, composing)
    layout = Layout(
        FloatContainer(VSplit([frame, Window(width=1)]), floats=[menu]),
        focused_element=shell.input,
    )
    app: Application[int] = Application(
        layout=layout,
        key_bindings=_key_bindings(shell, typing_feedback, composing),
        style=STYLE,
        full_screen=False,
        mouse_support=False,
        erase_when_done=False,
    )
    # A lone Escape is known once the input parser has waited ESCAPE_WAIT_SECONDS for
    # the rest of a sequence (alt+enter arrives as one "\x1b\r" read, so it still
    # pairs); waiting again for a longer key binding would only delay the interrupt.
    app.ttimeoutlen = ESCAPE_WAIT_SECONDS
    app.timeoutlen = 0.0
    # A question is seen once drawn: only a line typed from then on may answer it.
    app.after_render += lambda _: approvals.drawn(shell.input.text)
    return app


def _frame(shell: Shell, typing_feedback: Filter, composing: Filter) -> HSplit:
    """The stack, top to bottom: live lines, the question, the prompt, the slash command
    hints, the feedback line, the status line."""
    approvals = shell.approvals
    return HSplit(
        [
            ConditionalContainer(
                Window(
                    FormattedTextControl(lambda: _joined(shell.live_lines())),
                    wrap_lines=True,
                    dont_extend_height=True,
                ),
                filter=Condition(lambda: bool(shell.live_lines())),
            ),
            ConditionalContainer(
                approvals.window, filter=Condition(lambda: bool(approvals.asking))
            ),
            ConditionalContainer(_prompt_row(shell.input), filter=~typing_feedback),
            ConditionalContainer(
                Window(
                    FormattedTextControl(lambda: _joined(shell.slash_hints())),
                    dont_extend_height=True,
                ),
                filter=composing & Condition(lambda: bool(shell.slash_hints())),
            ),
            ConditionalContainer(_feedback_row(approvals.feedback), filter=typing_feedback),
            Window(
                FormattedTextControl(
                    lambda: [("class:toolbar", f" {shell.events.status_line()} ")]
                ),
                height=1,
            ),
        ]
    )


def _prompt_row(buffer: Buffer) -> VSplit:
    return VSplit(
        [
            Window(FormattedTextControl([("class:prompt", "› ")]), width=2),
            Window(
                BufferControl(buffer),
                wrap_lines=True,
                height=Dimension(min=1, max=10),
                dont_extend_height=True,
            ),
        ]
    )


def _feedback_row(buffer: Buffer) -> VSplit:
    return VSplit(
        [
            Window(FormattedTextControl([("class:question", "feedback › ")]), width=11),
            Window(BufferControl(buffer), wrap_lines=True, dont_extend_height=True),
        ]
    )


def _joined(lines: list[Fragment]) -> StyleAndTextTuples:
    fragments: StyleAndTextTuples = []
    for n, (style, text) in enumerate(lines):
        fragments.append((style, text if n == len(lines) - 1 else text + "\n"))
    return fragments


def _key_bindings(shell: Shell, typing_feedback: Condition, composing: Filter) -> KeyBindings:
    buffer, approvals = shell.input, shell.approvals
    empty = Condition(lambda: not buffer.text)
    slash = Condition(lambda: buffer.text.startswith("/") and " " not in buffer.text)
    table: list[tuple[tuple[str, ...], Filter, Callable[[KeyPressEvent], None]]] = [
        (("enter",), composing, lambda e: shell.submit()),
        (("escape", "enter"), composing, lambda e: buffer.newline(copy_margin=False)),
        (("c-j",), composing, lambda e: buffer.newline(copy_margin=False)),
        (("s-tab",), composing, lambda e: shell.cycle_mode()),
        (("tab",), composing & slash, lambda e: buffer.complete_next()),
        (("escape",), ~typing_feedback, lambda e: shell.interrupt()),
        (("c-c",), Always(), lambda e: shell.ctrl_c()),
        (("c-d",), composing & empty, lambda e: shell.quit_now()),
        (("c-o",), Always(), lambda e: shell.events.toggle_output()),
        (("enter",), typing_feedback, lambda e: approvals.send_feedback()),
        (("escape",), typing_feedback, lambda e: approvals.back_to_choices()),
    ]
    keys = KeyBindings()
    for sequence, condition, handler in table:
        keys.add(*sequence, filter=condition)(handler)
    return keys
