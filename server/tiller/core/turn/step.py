"""One step of a turn: a model response as it streams (``Draft``), then the response and its
tool results, committed to the history as they finish (``Step``).

Every ending of a step goes through ``Step.finish(reason)``: the assistant message is appended
(streamed text kept, a half-streamed tool_use dropped) and every tool_use gets exactly one
result, its own or an error result that says why it was not run (the ``NOT_RUN_*`` texts).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from tiller.core.permissions.call_rules import Ruled
from tiller.core.permissions.modes import Allow
from tiller.core.turn.events import Notice, TextDelta, ThinkingDelta, ToolFinished, ToolStarted
from tiller.core.turn.scheduler import ToolCall
from tiller.core.turn.setup import TurnHost
from tiller.jsontypes import JSON
from tiller.model.history import text_block, tool_result_block
from tiller.model.server_tools import server_call, server_result, without_unanswered
from tiller.protocol import ToolStatus
from tiller.tools.live_output import LiveOutput

NOT_RUN_WITH_PLAN = "Not run: submitted with the plan; call it again after the plan is approved."
NOT_RUN_AT_CHECKPOINT = "Not run: the turn was stopped at the checkpoint after {count} tool calls."
NOT_RUN_STOPPED = "Not run: the turn was stopped before this call: {why}."
NOT_RUN_ENDED = "Not run: the turn ended before this call."
NOT_RUN_CUT_OFF = "Not run: the response was cut off before it finished."
NOT_RUN_OUTPUT_LIMIT = (
    "Not run: the response reached the output limit ({limit}) before this call's input was "
    "complete. Make the input smaller (for a long file: write a first part, then append with "
    "edits)."
)
NOT_RUN_UNKNOWN_STOP = "Not run: the turn ended after this response (stop reason {reason})."


SERVER_TOOL = Allow("server tool")  # declared by the webSearch / webFetch settings


@dataclass
class Draft:
    """What one streaming response has shown so far; a ``StreamListener``.

    Server tool calls (web search / fetch, run by the API inside the response) are shown as
    they stream: ``toolStarted`` for a ``server_tool_use`` block, ``toolFinished`` for its
    result block."""

    host: TurnHost
    blocks: list[JSON] = field(default_factory=list)
    partial_text: list[str] = field(default_factory=list)
    server_calls: dict[str, tuple[str, float]] = field(default_factory=dict)  # id: name, since
    web_fetch_by: str | None = None  # the WebFetch rules that shaped web_fetch (web_fetch_rules)

    def text(self, delta: str) -> None:
        self.partial_text.append(delta)
        self.host.emit(TextDelta(delta))

    def thinking(self, delta: str) -> None:
        self.host.emit(ThinkingDelta(delta))

    def block(self, block: JSON) -> None:
        self.blocks.append(block)
        self.partial_text.clear()
        call, result = server_call(block), server_result(block)
        if call is not None:
            self.server_calls[call.id] = (call.name, time.monotonic())
            by = self._by(call.name)
            self.host.emit(ToolStarted(call.id, call.name, call.input, 0, False, by))
        elif result is not None:  # its call may be in the response a pause_turn continues
            name, since = self.server_calls.pop(result.tool_use_id, (result.name, time.monotonic()))
            status: ToolStatus = "ok" if result.ok else "error"
            ms = int((time.monotonic() - since) * 1000)
            self.host.emit(ToolFinished(result.tool_use_id, name, status, result.output, ms))

    def _by(self, name: str) -> Allow:
        if name == "web_fetch" and self.web_fetch_by is not None:
            return Allow(f"{SERVER_TOOL.by}; {self.web_fetch_by}")
        return SERVER_TOOL

    def notice(self, text: str) -> None:
        self.host.emit(Notice(text))

    def salvage(self) -> list[JSON]:
        """Complete blocks plus the text of a block still streaming; no partial thinking,
        no server tool call without its result (shown as interrupted)."""
        for call_id, (name, since) in self.server_calls.items():
            ms = int((time.monotonic() - since) * 1000)
            self.host.emit(ToolFinished(call_id, name, "interrupted", "Interrupted.", ms))
        self.server_calls.clear()
        tail = "".join(self.partial_text)
        blocks = without_unanswered(self.blocks)
        return [*blocks, text_block(tail)] if tail.strip() else blocks


@dataclass
class Step:
    """One model response and its tool results, committed to the history as they finish."""

    draft: Draft
    results: dict[str, JSON] = field(default_factory=dict)
    started: dict[str, ToolCall] = field(default_factory=dict)
    assistant: list[JSON] | None = None
    read_only: dict[str, bool] = field(default_factory=dict)  # judged once per call
    ruled: dict[str, Ruled] = field(default_factory=dict)  # what the rules say of each call
    running: dict[str, Running] = field(default_factory=dict)  # calls whose tool is running

    def restart(self) -> None:
        """Forget what this step's response showed: it is requested again."""
        self.draft = Draft(self.draft.host, web_fetch_by=self.draft.web_fetch_by)

    def commit_assistant(self, content: Sequence[JSON]) -> None:
        self.assistant = list(content)
        self.draft.host.append("assistant", self.assistant)

    def finish(self, missing: str) -> None:
        """Append the assistant message if not yet, and one result per tool_use, in order."""
        if self.assistant is None:
            self.commit_assistant(self.draft.salvage())
        assert self.assistant is not None
        ids = [b["id"] for b in self.assistant if b.get("type") == "tool_use"]
        blocks = [
            self.results.get(tid) or tool_result_block(tid, missing, is_error=True) for tid in ids
        ]
        self.draft.host.append("user", blocks)


@dataclass(frozen=True)
class Running:
    """A call whose tool runs: since when, and its output so far (kept for an interrupt)."""

    since: float
    output: LiveOutput
