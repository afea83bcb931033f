"""``tiller run --max-turns N``: the model's responses counted from what the server sends,
and the checkpoint answers that enforce the limit (no server support needed).

The server has no step limit, but it can ask ``tiller/checkpoint`` before a batch of tool
calls runs: with ``--max-turns`` the client sets ``toolBudget`` to 1, so it is asked before
every batch after the first call of the turn, and answers "stop" once the batch belongs to
response N+1. The checkpoints the user asked for (``--tool-budget``, else the server's 20)
are kept by the client: between them the answer is "continue", unasked.

A response is counted when it starts to stream (text or thinking) or, failing that, when the
server reports its usage (``tiller/state``'s ``context`` changes after every step, before its
tools run); it is over once that usage is reported or a tool event follows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

RESPONSE_EVENTS = frozenset({"textDelta", "thinkingDelta"})
TOOL_EVENTS = frozenset(
    {"toolStarted", "toolFinished", "confirmDecided", "checkpointDecided", "planDecided"}
)


@dataclass
class StepCounter:
    """The model responses of the running turn, and whether a checkpoint may let it go on."""

    max_steps: int
    budget: int  # the user's checkpoint budget, kept by the client (0: never ask)
    steps: int = 0
    _counting: bool = False  # between turnStarted and turnEnded
    _awaiting: bool = True  # the next response evidence starts a new response
    _context: Any = None
    _next_checkpoint: int = field(init=False)

    def __post_init__(self) -> None:
        self._next_checkpoint = self.budget

    def on_event(self, kind: Any) -> None:
        if kind == "turnStarted":
            self.steps, self._counting, self._awaiting = 0, True, True
            self._next_checkpoint = self.budget
        elif kind == "turnEnded":
            self._counting = False
        elif kind in RESPONSE_EVENTS:
            self._response_started()
        elif kind in TOOL_EVENTS:
            self._awaiting = True

    def on_state(self, state: Any) -> None:
        """``tiller/state``: a new ``context`` means a response was accounted (a step)."""
        if not isinstance(state, dict) or "context" not in state:
            return
        context = state["context"]
        if context == self._context:
            return
        self._context = context
        if self._counting and context is not None:
            self._response_started()
            self._awaiting = True  # that response is complete

    def _response_started(self) -> None:
        if self._counting and self._awaiting:
            self.steps += 1
            self._awaiting = False

    @property
    def exceeded(self) -> bool:
        """The tool calls about to run belong to a response past the limit."""
        return self.steps > self.max_steps

    def user_checkpoint(self, tools_used: Any) -> bool:
        """Whether the user's own budget asks here (the server's schedule, kept here)."""
        if self.budget <= 0 or not isinstance(tools_used, int):
            return False
        if tools_used < self._next_checkpoint:
            return False
        self._next_checkpoint = (tools_used // self.budget + 1) * self.budget
        return True
