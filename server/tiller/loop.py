"""One turn of the agent: stream a model response, run its tool calls, repeat.

Reads top to bottom: ``run_turn`` -> ``_step`` -> ``_stream`` / ``_execute``. Every way a
turn ends is a ``TurnOutcome`` value; the history is left valid whatever happens.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from . import history
from .approvals import Approver
from .compaction import COMPACT_AT
from .events import (
    Event,
    Notice,
    PlanDecided,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolStarted,
)
from .history import Message, text_block, tool_result_block
from .hooks import MAX_CONTINUATIONS, HookBroken, HookContinue, HookPassed, run_stop_hook
from .outcomes import Completed, Failed, Interrupted, Stopped, TurnOutcome
from .permissions import Allow, Ask, Deny, Grants, decide
from .protocol import Mode, Thinking, ToolStatus, TrailItem
from .provider import ModelRequest, ModelResponse, Provider, ProviderError
from .scheduler import Batch, ToolCall, partition, run_batch
from .tools.base import JSON, Tool, ToolContext, ToolResult

NOT_RUN_WITH_PLAN = "Not run: submitted with the plan; call it again after the plan is approved."
NOT_RUN_STOPPED = "Not run: the user stopped the turn at a checkpoint."
NOT_RUN_CUT_OFF = "Not run: the response was cut off before it finished."
MAX_PLAN_REVISIONS = 5  # final-text plans rejected with feedback, per turn


class TurnHost(Protocol):
    """The session as the loop sees it: live mode, grants, the history and an event sink."""

    @property
    def mode(self) -> Mode: ...
    def set_mode(self, mode: Mode) -> None: ...
    @property
    def grants(self) -> Grants: ...
    def set_grants(self, grants: Grants) -> None: ...
    @property
    def messages(self) -> tuple[Message, ...]: ...
    def append(self, role: history.Role, blocks: Sequence[JSON]) -> None: ...
    def emit(self, event: Event) -> None: ...
    def count_tools(self, used: int) -> None: ...
    async def compact(self) -> bool: ...


@dataclass(frozen=True)
class TurnSetup:
    """Everything fixed for the length of one turn."""

    turn_id: str
    model: str
    thinking: Thinking
    max_tokens: int
    system: str
    tools: Mapping[str, Tool]
    context: ToolContext
    provider: Provider
    approver: Approver
    tool_budget: int
    session_id: str = ""
    stop_hook: str | None = None


@dataclass
class _Draft:
    """What one streaming response has shown so far; a ``StreamListener``."""

    host: TurnHost
    blocks: list[JSON] = field(default_factory=list)
    partial_text: list[str] = field(default_factory=list)

    def text(self, delta: str) -> None:
        self.partial_text.append(delta)
        self.host.emit(TextDelta(delta))

    def thinking(self, delta: str) -> None:
        self.host.emit(ThinkingDelta(delta))

    def block(self, block: JSON) -> None:
        self.blocks.append(block)
        self.partial_text.clear()

    def notice(self, text: str) -> None:
        self.host.emit(Notice(text))

    def salvage(self) -> list[JSON]:
        """Complete blocks plus the text of a block still streaming; no partial thinking."""
        tail = "".join(self.partial_text)
        return [*self.blocks, text_block(tail)] if tail.strip() else list(self.blocks)


@dataclass
class _Step:
    """One model response and its tool results, committed to the history as they finish."""

    draft: _Draft
    results: dict[str, JSON] = field(default_factory=dict)
    started: dict[str, ToolCall] = field(default_factory=dict)
    assistant: list[JSON] | None = None

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


@dataclass
class Turn:
    """The running state of one turn (fresh per turn; nothing to reset)."""

    host: TurnHost
    setup: TurnSetup
    trail: list[TrailItem] = field(default_factory=list)
    tools_used: int = 0
    next_checkpoint: int = 0
    hook_continuations: int = 0
    plan_revisions: int = 0
    compacted: bool = False

    async def run(self) -> TurnOutcome:
        """Run until the model ends without tool calls, or the turn is stopped or fails.

        The user's prompt is already the last message of the history.
        """
        self.next_checkpoint = self.setup.tool_budget
        step: _Step | None = None
        try:
            while True:
                step = _Step(_Draft(self.host))
                outcome = await self._step(step)
                if outcome is not None:
                    return outcome
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            if step is not None:
                for call in step.started.values():
                    if call.id not in step.results:
                        self._record(
                            call, ToolResult(history.INTERRUPTED_RESULT, True), "interrupted", 0
                        )
                step.finish(history.INTERRUPTED_RESULT)
            return Interrupted()

    async def _step(self, step: _Step) -> TurnOutcome | None:
        try:
            response = await self._stream(step.draft)
        except ProviderError as err:
            step.finish(NOT_RUN_CUT_OFF)
            if err.kind == "context_too_long" and await self._compact("the prompt is too long"):
                return None  # retry the step once with the compacted history
            return Failed(err.kind, err.message, err.retryable)
        step.commit_assistant(response.content)
        if response.usage.total_input >= COMPACT_AT:
            await self._compact(f"{response.usage.total_input} input tokens")
        calls = [
            ToolCall(b["id"], b["name"], b["input"] if isinstance(b.get("input"), dict) else {})
            for b in response.content
            if b.get("type") == "tool_use"
        ]
        if not calls:
            step.finish(NOT_RUN_CUT_OFF)
            return await self._final(response)
        outcome = await self._execute(calls, step)
        step.finish(NOT_RUN_STOPPED)
        return outcome

    async def _compact(self, why: str) -> bool:
        """Summarize older turns, at most once per turn; True when the history got shorter."""
        if self.compacted:
            return False
        self.compacted = True
        self.host.emit(Notice(f"Compacting the conversation ({why})…"))
        return await self.host.compact()

    async def _stream(self, draft: _Draft) -> ModelResponse:
        s = self.setup
        request = ModelRequest(
            model=s.model,
            system=s.system,
            tools=tuple(t.spec() for t in s.tools.values()),
            messages=history.repair(self.host.messages),
            max_tokens=s.max_tokens,
            thinking=s.thinking,
        )
        return await s.provider.stream(request, draft)

    async def _final(self, response: ModelResponse) -> TurnOutcome | None:
        final = "".join(b["text"] for b in response.content if b.get("type") == "text").strip()
        if self.host.mode == "plan" and final:
            answer = await self.setup.approver.approve_plan(self.setup.turn_id, final)
            self.host.emit(PlanDecided(answer.approved, answer.feedback))
            if answer.approved:
                self.host.set_mode(answer.mode)
                self.host.append("user", [text_block("Plan approved. Implement it now.")])
                return None
            if answer.feedback and self.plan_revisions < MAX_PLAN_REVISIONS:
                self.plan_revisions += 1
                revise = f"Plan not approved: {answer.feedback}. Revise it."
                self.host.append("user", [text_block(revise)])
                return None
            # Rejected without a word (or nobody could answer), or too often: the turn ends.
            if answer.feedback:
                self.host.emit(Notice(f"Plan rejected {MAX_PLAN_REVISIONS + 1} times: turn ended"))
        return await self._stop_hook(final or None)

    async def _stop_hook(self, final: str | None) -> TurnOutcome | None:
        """Let the stop hook send the model back to work, at most MAX_CONTINUATIONS times."""
        s = self.setup
        if s.stop_hook is None or self.hook_continuations >= MAX_CONTINUATIONS:
            return Completed(final)
        hook = await run_stop_hook(
            s.stop_hook,
            s.context.workspace,
            session_id=s.session_id,
            turn_id=s.turn_id,
            final=final,
        )
        match hook:
            case HookPassed():
                return Completed(final)
            case HookContinue(output=output):
                self.hook_continuations += 1
                count = f"{self.hook_continuations}/{MAX_CONTINUATIONS}"
                self.host.emit(Notice(f"Stop hook asks to continue ({count})"))
                self.host.append("user", [text_block(f"continue: {output}")])
                return None
            case HookBroken(reason=reason):
                self.host.emit(Notice(reason))
                return Completed(final)

    # --- tools ----------------------------------------------------------------------------

    async def _execute(self, calls: list[ToolCall], step: _Step) -> TurnOutcome | None:
        plan_exit = next((c for c in calls if c.name == "exit_plan_mode"), None)
        if plan_exit is not None:
            for call in calls:
                if call is not plan_exit:
                    self._skip(call, step, NOT_RUN_WITH_PLAN, "skipped")
            await self._exit_plan(plan_exit, step)
            return None
        batches = partition(calls, self._is_read_only)
        for batch in batches:
            if not await self._checkpoint():
                for later in batches[batch.index :]:
                    for call in later.calls:
                        self._skip(call, step, NOT_RUN_STOPPED, "skipped")
                return Stopped("stopped at a checkpoint")
            approved = [c for c in batch.calls if await self._permit(c, batch, step)]
            run = Batch(batch.index, tuple(approved), batch.concurrent and len(approved) > 1)
            for call, result in zip(approved, await run_batch(run, self._run_call), strict=True):
                step.results[call.id] = result
        return None

    def _is_read_only(self, call: ToolCall) -> bool:
        tool = self.setup.tools.get(call.name)
        return tool is not None and tool.is_read_only(call.input)

    async def _checkpoint(self) -> bool:
        budget = self.setup.tool_budget
        if budget <= 0 or self.tools_used < self.next_checkpoint:
            return True
        go_on = await self.setup.approver.checkpoint(
            self.setup.turn_id, self.tools_used, tuple(self.trail)
        )
        self.next_checkpoint = (self.tools_used // budget + 1) * budget
        return go_on

    async def _permit(self, call: ToolCall, batch: Batch, step: _Step) -> bool:
        """Start the call's log line and decide whether it runs; a refusal is its result."""
        self._start(call, step, batch.index, batch.concurrent)
        tool = self.setup.tools.get(call.name)
        if tool is None:
            known = ", ".join(self.setup.tools)
            self._finish(
                call,
                step,
                ToolResult(f"Unknown tool {call.name!r}. Tools: {known}", True),
                "error",
                0,
            )
            return False
        command = call.input.get("command") if tool.kind == "bash" else None
        decision = decide(
            self.host.mode,
            tool.kind,
            read_only=tool.is_read_only(call.input),
            command=command if isinstance(command, str) else None,
            grants=self.host.grants,
        )
        match decision:
            case Allow():
                return True
            case Deny(reason=reason):
                self._finish(call, step, ToolResult(reason, True), "denied", 0)
                return False
            case Ask():
                preview = await tool.preview(call.input, self.setup.context)
                answer = await self.setup.approver.confirm_tool(self.setup.turn_id, call, preview)
                match answer.decision:
                    case "allow":
                        return True
                    case "allowSession":
                        grants = self.host.grants
                        self.host.set_grants(
                            grants.allow_edits()
                            if tool.kind == "edit"
                            else grants.allow_command(str(command))
                        )
                        return True
                    case "deny":
                        why = "Denied by the user."
                        if answer.feedback:
                            why += f" Their feedback: {answer.feedback}"
                        self._finish(call, step, ToolResult(why, True), "denied", 0)
                        return False

    async def _run_call(self, call: ToolCall) -> JSON:
        tool = self.setup.tools[call.name]
        started = time.monotonic()
        try:
            result = await tool.run(call.input, self.setup.context)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # a tool bug must not take the turn down
            result = ToolResult(f"Tool {call.name} failed: {type(err).__name__}: {err}", True)
        ms = int((time.monotonic() - started) * 1000)
        return self._record(call, result, "error" if result.is_error else "ok", ms)

    def _record(self, call: ToolCall, result: ToolResult, status: ToolStatus, ms: int) -> JSON:
        self.host.emit(ToolFinished(call.id, call.name, status, result.output, ms))
        self.trail.append(TrailItem(call.name, status))
        if status in ("ok", "error"):
            self.tools_used += 1
            self.host.count_tools(self.tools_used)
        return tool_result_block(call.id, result.output, is_error=result.is_error)

    def _finish(
        self, call: ToolCall, step: _Step, result: ToolResult, status: ToolStatus, ms: int
    ) -> None:
        step.results[call.id] = self._record(call, result, status, ms)

    def _start(self, call: ToolCall, step: _Step, batch: int, concurrent: bool) -> None:
        step.started[call.id] = call
        self.host.emit(ToolStarted(call.id, call.name, call.input, batch, concurrent))

    def _skip(self, call: ToolCall, step: _Step, why: str, status: ToolStatus) -> None:
        self._start(call, step, 0, False)
        self._finish(call, step, ToolResult(why, True), status, 0)

    async def _exit_plan(self, call: ToolCall, step: _Step) -> None:
        self._start(call, step, 0, False)
        plan = call.input.get("plan")
        if not isinstance(plan, str) or not plan.strip():
            self._finish(
                call,
                step,
                ToolResult("exit_plan_mode needs a non-empty 'plan' (markdown).", True),
                "error",
                0,
            )
            return
        if self.host.mode != "plan":
            self.host.emit(Notice("exit_plan_mode called outside plan mode; asking anyway"))
        answer = await self.setup.approver.approve_plan(self.setup.turn_id, plan)
        self.host.emit(PlanDecided(answer.approved, answer.feedback))
        if answer.approved:
            self.host.set_mode(answer.mode)
            text = f"The user approved the plan (mode is now {answer.mode}). Implement it now."
            self._finish(call, step, ToolResult(text), "ok", 0)
        else:
            feedback = answer.feedback or "no feedback given"
            text = (
                f"The user did not approve the plan: {feedback}. Revise the plan; mode stays plan."
            )
            self._finish(call, step, ToolResult(text, True), "error", 0)
