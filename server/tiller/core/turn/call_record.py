"""The record of a turn's tool calls: each call starts (``toolStarted``, with the decision
that let it run or not) and finishes exactly once (``toolFinished``, its result block in
``Step.results``), and adds to the turn's trail and its count of tools used."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tiller.core.permissions.modes import Decision
from tiller.core.turn.events import ToolFinished, ToolStarted
from tiller.core.turn.scheduler import ToolCall
from tiller.core.turn.setup import TurnHost, TurnSetup
from tiller.core.turn.step import Running, Step
from tiller.jsontypes import JSON
from tiller.model import history
from tiller.model.history import tool_result_block
from tiller.protocol import ToolStatus, TrailItem
from tiller.tools.base import ToolResult


@dataclass
class CallRecord:
    """What the calls of one turn add up to: the trail and the tools used. Fresh per turn."""

    host: TurnHost
    setup: TurnSetup
    trail: list[TrailItem] = field(default_factory=list)
    tools_used: int = 0

    def answer_interrupted(self, step: Step) -> None:
        """Answer every call of an interrupted step that started and has no result yet."""
        for call in step.started.values():
            if call.id not in step.results:
                running = step.running.get(call.id)
                step.results[call.id] = self.record_interrupted(call, running)

    def record_interrupted(self, call: ToolCall, running: Running | None) -> JSON:
        """An interrupted call's result: its real duration and the output it had produced."""
        if running is None:
            return self.record(call, ToolResult(history.INTERRUPTED_RESULT, True), "interrupted", 0)
        partial = running.output.text()
        text = history.INTERRUPTED_RESULT
        if partial.strip():
            text += f" (partial output before the interrupt):\n{partial}"
        ms = int((time.monotonic() - running.since) * 1000)
        return self.record(call, ToolResult(text, True), "interrupted", ms)

    def record(self, call: ToolCall, result: ToolResult, status: ToolStatus, ms: int) -> JSON:
        edit = result.edit if status == "ok" else None
        if edit is not None and self.setup.edits is not None:
            self.setup.edits.keep(self.setup.session_id, call.id, edit)  # before it is shown
        line = edit.line if edit is not None else None
        self.host.emit(
            ToolFinished(call.id, call.name, status, result.output, ms, result.diff, line)
        )
        self.trail.append(TrailItem(call.name, status))
        if status in ("ok", "error"):
            self.tools_used += 1
            self.host.count_tools(self.tools_used)
        return tool_result_block(
            call.id, result.output, is_error=result.is_error, blocks=result.blocks
        )

    def finish(
        self, call: ToolCall, step: Step, result: ToolResult, status: ToolStatus, ms: int
    ) -> None:
        step.results[call.id] = self.record(call, result, status, ms)

    def start(
        self,
        call: ToolCall,
        step: Step,
        batch: int,
        concurrent: bool,
        decision: Decision | None = None,
    ) -> None:
        step.started[call.id] = call
        self.host.emit(ToolStarted(call.id, call.name, call.input, batch, concurrent, decision))

    def skip(self, call: ToolCall, step: Step, why: str, status: ToolStatus) -> None:
        """Answer a call that is not run (with ``why``), as started and finished at once."""
        self.start(call, step, 0, False)
        self.finish(call, step, ToolResult(why, True), status, 0)
