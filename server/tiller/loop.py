"""One turn of the agent: stream a model response, run its tool calls, repeat.

Reads top to bottom: ``run`` -> ``_step`` -> ``_respond`` (stream, retry what can be retried)
-> the stop reason, matched once in ``_step`` -> ``_execute`` / ``_final``. Every way a turn
ends is a ``TurnOutcome`` value; the history is left valid whatever happens.

What the loop guarantees about the history (the stored one; ``history.for_request`` is sent):
- compaction runs only between steps, when the history ends with the results of the last step,
  so a tool_use is never answered twice;
- a turn that fails before any assistant reply, or is refused, leaves no trace in it (the
  transcript keeps it): the next prompt is a fresh user message, never merged with it;
- a cut-off or oversized tool call is answered with an error result and never run, and its
  input is not kept.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from . import compaction, history
from .approvals import Approver
from .events import (
    Event,
    Notice,
    PlanDecided,
    StepRestarted,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolOutput,
    ToolStarted,
)
from .history import Message, text_block, tool_result_block
from .hooks import MAX_CONTINUATIONS, HookBroken, HookContinue, HookPassed, run_stop_hook
from .jsontypes import JSON
from .live_events import CoalescedOutput
from .models import ModelSpec, price
from .outcomes import Completed, Failed, Interrupted, Refused, Stopped, TurnOutcome
from .permissions import Allow, Ask, Decision, Deny, Grants, decide
from .plan_gate import (
    EXIT_APPROVED,
    EXIT_DECLINED,
    EXIT_GAVE_UP,
    EXIT_REVISE,
    GAVE_UP_NOTICE,
    PLAN_APPROVED,
    PLAN_REVISE,
    Approved,
    Declined,
    GaveUp,
    PlanGate,
    PlanVerdict,
    Revise,
)
from .protocol import Mode, Thinking, ToolStatus, TrailItem
from .provider import ModelRequest, ModelResponse, Provider, ProviderError
from .scheduler import Batch, ToolCall, partition, run_batch
from .tools.base import Tool, ToolContext, ToolResult, read_only_call
from .tools.live_output import LiveOutput
from .tools.validation import validate_input
from .usage import NO_USAGE, ContextUse, Usage

NOT_RUN_WITH_PLAN = "Not run: submitted with the plan; call it again after the plan is approved."
NOT_RUN_STOPPED = "Not run: the user stopped the turn at a checkpoint."
NOT_RUN_CUT_OFF = "Not run: the response was cut off before it finished."
NOT_RUN_OUTPUT_LIMIT = (
    "Not run: the response reached the output limit ({limit}) before this call's input was "
    "complete. Make the input smaller (for a long file: write a first part, then append with "
    "edits)."
)
NOT_RUN_UNKNOWN_STOP = "Not run: the turn ended after this response (stop reason {reason})."
PROMPT_NOT_KEPT = "(The prompt was not added to the conversation: send it again.)"
CONTINUE_PROMPT = "Your answer was cut off at the output limit. Continue exactly where you stopped."
MAX_TEXT_CONTINUATIONS = 1  # automatic "continue" after an answer cut off at the output limit
MAX_PAUSES = 8  # pause_turn continuations per turn
STEP_RETRY_KINDS = frozenset({"overloaded", "server", "connection", "timeout"})


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
    def rewrite_history(self, messages: tuple[Message, ...]) -> None:
        """Replace the whole history (compaction, or a turn dropped after it failed or was
        refused) and persist it."""
        ...

    def record_usage(self, usage: Usage, context: ContextUse | None) -> None:
        """One model call's priced usage; ``context`` after a step (None for a summary)."""
        ...


@dataclass(frozen=True)
class TurnSetup:
    """Everything fixed for the length of one turn."""

    turn_id: str
    model: str
    thinking: Thinking
    max_tokens: int | None  # None: the model's max output
    system: str
    tools: Mapping[str, Tool]
    context: ToolContext
    provider: Provider
    approver: Approver
    tool_budget: int
    session_id: str = ""
    stop_hook: str | None = None
    retry_delays: tuple[float, ...] = (1.0, 2.0)  # backoff of step retries after a fault
    compact_ratio: float = compaction.COMPACT_RATIO
    # Done once the workspace snapshot taken as the turn started is safe: it runs while the
    # first response streams, and no tool runs before it is done.
    snapshot: asyncio.Future[None] | None = None

    @property
    def spec(self) -> ModelSpec:
        """The model's window, max output and prices (catalog, refreshed from the API)."""
        return self.provider.spec(self.model)


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
    read_only: dict[str, bool] = field(default_factory=dict)  # judged once per call
    running: dict[str, _Running] = field(default_factory=dict)  # calls whose tool is running

    def restart(self) -> None:
        """Forget what this step's response showed: it is requested again."""
        self.draft = _Draft(self.draft.host)

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
class _Running:
    """A call whose tool runs: since when, and its output so far (kept for an interrupt)."""

    since: float
    output: LiveOutput


@dataclass(frozen=True)
class _Room:
    """Retry a cut-off step with this ``max_tokens`` (None: the model's max output)."""

    max_tokens: int | None


def _calls(content: Sequence[JSON]) -> list[ToolCall]:
    return [
        ToolCall(b["id"], b["name"], b["input"] if isinstance(b.get("input"), dict) else {})
        for b in content
        if b.get("type") == "tool_use"
    ]


def _text(content: Sequence[JSON]) -> str:
    return "".join(b["text"] for b in content if b.get("type") == "text").strip()


def _kept_content(response: ModelResponse) -> list[JSON]:
    """The response as it goes into the history: unusable tool inputs are not kept."""
    bad = response.input_errors
    return [
        {**b, "input": {}} if b.get("type") == "tool_use" and b.get("id") in bad else b
        for b in response.content
    ]


def _cut_off_call(response: ModelResponse) -> bool:
    """The response stopped inside a tool call's input."""
    last = response.content[-1] if response.content else {}
    return last.get("type") == "tool_use" or any(
        b.get("type") == "tool_use" and b.get("id") in response.input_errors
        for b in response.content[-1:]
    )


def _prompt_of(messages: Sequence[Message]) -> JSON | None:
    """The block the user's prompt was stored as (the last block of the last user message)."""
    if not messages or messages[-1].role != "user" or not messages[-1].content:
        return None
    last = messages[-1].content[-1]
    return last if last.get("type") != "tool_result" else None


@dataclass
class Turn:
    """The running state of one turn (fresh per turn; nothing to reset)."""

    host: TurnHost
    setup: TurnSetup
    trail: list[TrailItem] = field(default_factory=list)
    usage: Usage = NO_USAGE  # every model call of this turn, priced (turnEnded.usage)
    tools_used: int = 0
    next_checkpoint: int = 0
    hook_continuations: int = 0
    plan_gate: PlanGate = PlanGate()  # exit_plan_mode and final-text plans: one counter
    text_continuations: int = 0
    pauses: int = 0
    context_used: int = 0  # tokens in context after the last step (0: unknown / compacted)
    compact_after: int = 0  # no threshold compaction before the history is this long again
    prompt: JSON | None = None

    async def run(self) -> TurnOutcome:
        """Run until the model ends without tool calls, or the turn is stopped or fails.

        The user's prompt is already the last message of the history.
        """
        self.next_checkpoint = self.setup.tool_budget
        self.prompt = _prompt_of(self.host.messages)
        step: _Step | None = None
        try:
            while True:
                step = _Step(_Draft(self.host))
                outcome = await self._step(step)
                if outcome is not None:
                    return self._settle(outcome)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            if step is not None:
                for call in step.started.values():
                    if call.id not in step.results:
                        running = step.running.get(call.id)
                        step.results[call.id] = self._record_interrupted(call, running)
                step.finish(history.INTERRUPTED_RESULT)
            return Interrupted()

    def _settle(self, outcome: TurnOutcome) -> TurnOutcome:
        """A refused turn, or one that failed before any reply, leaves the history as it was
        before its prompt (the docs: reset the context after a refusal)."""
        match outcome:
            case Refused():
                self._forget_turn()
            case Failed(kind=kind, message=message) if not self._replied():
                self._forget_turn()
                if kind != "context_too_long":  # that message already says so
                    return replace(outcome, message=f"{message} {PROMPT_NOT_KEPT}")
            case _:
                pass
        return outcome

    def _replied(self) -> bool:
        messages = self.host.messages
        for i in range(len(messages) - 1, -1, -1):
            if messages[i].role == "user" and self.prompt in messages[i].content:
                return any(m.role == "assistant" for m in messages[i + 1 :])
        return True  # the prompt is no longer there as such (compacted): keep everything

    def _forget_turn(self) -> None:
        if self.prompt is not None:
            self.host.rewrite_history(history.without_turn(self.host.messages, self.prompt))

    async def _step(self, step: _Step) -> TurnOutcome | None:
        """One model response and what it asks for; None when the turn goes on."""
        await self._compact_if_full()
        max_tokens = self.setup.max_tokens
        more_room_tried = False
        while True:
            response = await self._respond(step, max_tokens)
            if not isinstance(response, ModelResponse):
                return response
            match response.stop_reason:
                case "tool_use" | "end_turn" | "stop_sequence" | None:
                    break
                case "max_tokens" | "model_context_window_exceeded" if _cut_off_call(response):
                    room = None if more_room_tried else await self._more_room(response, max_tokens)
                    if room is None:
                        return self._cut_off(step, response, max_tokens)
                    more_room_tried = True
                    self._restart(step, "output_limit")
                    max_tokens = room.max_tokens
                case "max_tokens" | "model_context_window_exceeded" if not _calls(response.content):
                    return self._truncated_text(step, response, max_tokens)
                case "max_tokens" | "model_context_window_exceeded":
                    break  # complete calls before a cut-off text: run them, the turn goes on
                case "refusal":
                    return self._refused(response)
                case "pause_turn" if self.pauses < MAX_PAUSES:
                    self.pauses += 1
                    step.commit_assistant(_kept_content(response))
                    return None  # the next request continues the same assistant message
                case "pause_turn":
                    why = f"The model paused {MAX_PAUSES} times in one turn: the turn ends here."
                    return self._end_early(step, response, "pause_turn", why)
                case other:
                    why = f"The model stopped for a reason Tiller does not know: {other!r}"
                    return self._end_early(step, response, str(other), why)
        content = _kept_content(response)
        step.commit_assistant(content)
        calls = _calls(content)
        if not calls:
            step.finish(NOT_RUN_CUT_OFF)
            return await self._final(response)
        for call in [c for c in calls if c.id in response.input_errors]:
            self._skip(call, step, response.input_errors[call.id], "error")
        outcome = await self._execute([c for c in calls if c.id not in response.input_errors], step)
        step.finish(NOT_RUN_STOPPED)
        return outcome

    # --- one response: stream, and retry what can be retried ------------------------------

    async def _respond(self, step: _Step, max_tokens: int | None) -> ModelResponse | TurnOutcome:
        """The step's response, after at most ``len(retry_delays)`` retries of a fault in the
        stream and one compaction when the prompt is too long; else how the turn ends."""
        faults = 0
        compacted = False
        delays = self.setup.retry_delays
        while True:
            try:
                response = await self._stream(step.draft, max_tokens)
            except ProviderError as err:
                if err.kind == "context_too_long" and not compacted:
                    compacted = True
                    if await self._compact("the prompt is too long"):
                        step.restart()
                        continue
                elif err.retryable and err.kind in STEP_RETRY_KINDS and faults < len(delays):
                    delay = delays[faults]
                    faults += 1
                    self.host.emit(
                        Notice(
                            f"The model API failed during the response ({err.kind}): "
                            f"retrying this step in {delay:g} s ({faults}/{len(delays)})"
                        )
                    )
                    await asyncio.sleep(delay)
                    self._restart(step, err.kind)
                    continue
                return self._failed(step, err)
            except Exception as err:  # an SDK surprise must not lose what was shown
                return self._failed(step, ProviderError("internal", f"{type(err).__name__}: {err}"))
            self._account(response.usage, step=True)
            return response

    def _restart(self, step: _Step, reason: str) -> None:
        """Tell clients to discard the step's partial output; it is streamed again."""
        self.host.emit(StepRestarted(reason))
        step.restart()

    async def _stream(self, draft: _Draft, max_tokens: int | None) -> ModelResponse:
        s = self.setup
        request = ModelRequest(
            model=s.model,
            system=s.system,
            tools=tuple(t.spec() for t in s.tools.values()),
            messages=history.for_request(self.host.messages),
            max_tokens=max_tokens,
            thinking=s.thinking,
        )
        return await s.provider.stream(request, draft)

    def _account(self, usage: Usage, *, step: bool) -> None:
        """Price a model call, add it to the turn, tell the session (context after a step)."""
        priced = price(usage, self.setup.spec)
        self.usage = self.usage + priced
        context = ContextUse.after(usage, self.setup.spec.context_window) if step else None
        if context is not None:
            self.context_used = context.used_tokens
        self.host.record_usage(priced, context)

    def _failed(self, step: _Step, err: ProviderError) -> TurnOutcome:
        """The turn fails; the blocks already shown are kept (a cut-off call is not run)."""
        step.finish(NOT_RUN_CUT_OFF)
        message = err.message
        if err.kind == "context_too_long":
            message = (
                "The conversation with this prompt does not fit in the model's context window, "
                f"even after compaction ({err.message}). If the prompt was the cause it was not "
                "kept: send a shorter one, or attach less."
            )
        return Failed(err.kind, message, err.retryable)

    # --- the stop reasons -------------------------------------------------------------------

    async def _more_room(self, response: ModelResponse, max_tokens: int | None) -> _Room | None:
        """A call was cut off: room for one more try — the model's max output, or a compacted
        context when the context window was what ran out; None when there is none."""
        if response.stop_reason == "model_context_window_exceeded":
            return _Room(max_tokens) if await self._compact("the context window is full") else None
        limit = self.setup.spec.max_output
        if max_tokens is not None and max_tokens < limit:
            self.host.emit(
                Notice(f"A tool call hit the output limit ({max_tokens} tokens): retrying with "
                       f"{limit}")
            )  # fmt: skip
            return _Room(limit)
        return None

    def _cut_off(self, step: _Step, response: ModelResponse, max_tokens: int | None) -> TurnOutcome:
        """A call cut off at the output limit even with the most room: answered, never run."""
        limit = f"{max_tokens or self.setup.spec.max_output} tokens"
        if response.stop_reason == "model_context_window_exceeded":
            limit = f"the {self.setup.spec.context_window}-token context window"
        content = _kept_content(response)
        step.commit_assistant(content)
        calls = _calls(content)
        for call in calls[:-1]:
            self._skip(call, step, NOT_RUN_CUT_OFF, "skipped")
        self._skip(calls[-1], step, NOT_RUN_OUTPUT_LIMIT.format(limit=limit), "error")
        step.finish(NOT_RUN_CUT_OFF)
        return Failed(
            "output_limit",
            f"The model's tool call did not fit in its output limit ({limit}); it was not run. "
            "Ask for smaller pieces (e.g. write a long file in parts).",
            False,
        )

    def _truncated_text(
        self, step: _Step, response: ModelResponse, max_tokens: int | None
    ) -> TurnOutcome | None:
        """An answer cut off at the output limit: continue once, then end with a notice."""
        step.commit_assistant(_kept_content(response))
        step.finish(NOT_RUN_CUT_OFF)
        if self.text_continuations < MAX_TEXT_CONTINUATIONS:
            self.text_continuations += 1
            self.host.emit(Notice("The answer reached the output limit: asking to continue"))
            self.host.append("user", [text_block(CONTINUE_PROMPT)])
            return None
        limit = max_tokens or self.setup.spec.max_output
        self.host.emit(
            Notice(f"The answer is truncated: it reached the output limit ({limit} tokens) "
                   "again. Ask to continue, or for a shorter answer.")
        )  # fmt: skip
        return Completed(_text(response.content) or None)

    def _refused(self, response: ModelResponse) -> TurnOutcome:
        details = response.stop_details or {}
        category, explanation = details.get("category"), details.get("explanation")
        self.host.emit(
            Notice("The model declined to continue. This turn was removed from the context "
                   "sent to the model (the transcript keeps it); rephrase to go on.")
        )  # fmt: skip
        return Refused(
            category if isinstance(category, str) else None,
            explanation if isinstance(explanation, str) else None,
        )

    def _end_early(
        self, step: _Step, response: ModelResponse, reason: str, why: str
    ) -> TurnOutcome:
        """End the turn as completed with what the response said; its calls are not run."""
        step.commit_assistant(_kept_content(response))
        step.finish(NOT_RUN_UNKNOWN_STOP.format(reason=reason))
        self.host.emit(Notice(why))
        return Completed(_text(response.content) or None)

    # --- compaction (between steps only) --------------------------------------------------

    async def _compact_if_full(self) -> None:
        """Before a step: compact when the last step left the context over the threshold.
        Runs only here, when the history ends with the last step's results. When nothing
        could be compacted, it is tried again only after another step."""
        window = self.setup.spec.context_window
        messages = self.host.messages
        full = self.context_used >= compaction.compact_at(window, self.setup.compact_ratio)
        between_steps = bool(messages) and messages[-1].role == "user"
        if not (full and between_steps and len(messages) >= self.compact_after):
            return
        if not await self._compact(f"{self.context_used} of {window} tokens in use"):
            self.compact_after = len(self.host.messages) + 2

    async def _compact(self, why: str) -> bool:
        """Summarize older turns (or older steps of this one); True when the history changed."""
        s = self.setup
        self.host.emit(Notice(f"Compacting the conversation ({why})…"))
        try:
            done = await compaction.compact(
                s.provider, s.model, self.host.messages, window=s.spec.context_window, in_turn=True
            )
        except ProviderError as err:
            self.host.emit(Notice(f"Compaction failed ({err.kind}): {err.message}"))
            return False
        if done is None:
            self.host.emit(Notice("Nothing older to compact."))
            return False
        self._account(done.usage, step=False)
        self.host.rewrite_history(done.messages)
        self.context_used = 0  # measured again by the next step
        self.host.emit(Notice(f"Compacted {done.summarized} messages into a summary."))
        return True

    # --- the end of a turn ------------------------------------------------------------------

    async def _final(self, response: ModelResponse) -> TurnOutcome | None:
        """A final text; in plan mode, one that reads as a plan goes through the plan gate
        (approved or revised: the turn goes on). Any other ends the turn, mode unchanged."""
        final = _text(response.content)
        if self.host.mode == "plan" and self.plan_gate.offers(final):
            match await self._ask_plan(final):
                case Approved():
                    self.host.append("user", [text_block(PLAN_APPROVED)])
                    return None
                case Revise(feedback=feedback):
                    self.host.append("user", [text_block(PLAN_REVISE.format(feedback=feedback))])
                    return None
                case Declined() | GaveUp():
                    pass  # the turn ends with the text as its final answer
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
            env=s.context.shell.env,
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
        if self.setup.snapshot is not None:
            await asyncio.shield(self.setup.snapshot)  # an interrupt never cuts a snapshot
        plan_exit = next((c for c in calls if c.name == "exit_plan_mode"), None)
        if plan_exit is not None:
            for call in calls:
                if call is not plan_exit:
                    self._skip(call, step, NOT_RUN_WITH_PLAN, "skipped")
            return await self._exit_plan(plan_exit, step)
        # Judged once per call, off the event loop (a long command line takes a while to
        # parse, and the answer depends on the files), before anything runs.
        step.read_only.update(await asyncio.to_thread(self._judge, calls))
        done, index = 0, 0
        while done < len(calls):
            first = partition(calls[done:], lambda call: step.read_only[call.id])[0]
            batch = replace(first, index=index)
            if not await self._checkpoint():
                for call in calls[done:]:
                    self._skip(call, step, NOT_RUN_STOPPED, "skipped")
                return Stopped("stopped at a checkpoint")
            approved = [c for c in batch.calls if await self._permit(c, batch, step)]
            run = Batch(batch.index, tuple(approved), batch.concurrent and len(approved) > 1)
            results = await run_batch(run, lambda call: self._run_call(call, step))
            for call, result in zip(approved, results, strict=True):
                step.results[call.id] = result
            done, index = done + len(batch.calls), index + 1
            if approved and not batch.concurrent and not step.read_only[batch.calls[0].id]:
                # A call that may write has run: what the later calls read may have changed
                # (a .git/config written now could make a "read-only" git run a program), so
                # they are judged again before they run.
                step.read_only.update(await asyncio.to_thread(self._judge, calls[done:]))
        return None

    def _judge(self, calls: Sequence[ToolCall]) -> dict[str, bool]:
        """Which calls only read (in a worker thread)."""
        judged = {}
        for call in calls:
            tool = self.setup.tools.get(call.name)
            judged[call.id] = tool is not None and read_only_call(
                tool, call.input, self.setup.context
            )
        return judged

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
        """Decide whether the call runs and start its log line with that decision (clients
        render it; none judges again); a refusal is its result."""
        tool = self.setup.tools.get(call.name)
        if tool is None:
            known = ", ".join(self.setup.tools)
            problem: str | None = f"Unknown tool {call.name!r}. Tools: {known}"
        else:
            problem = validate_input(tool, call.input)
        if tool is None or problem is not None:
            self._start(call, step, batch.index, batch.concurrent)
            self._finish(call, step, ToolResult(problem or "", True), "error", 0)
            return False
        command = call.input.get("command") if tool.kind == "bash" else None
        decision = decide(
            self.host.mode,
            tool.kind,
            read_only=step.read_only.get(call.id, False),
            command=command if isinstance(command, str) else None,
            grants=self.host.grants,
        )
        self._start(call, step, batch.index, batch.concurrent, decision)
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

    async def _run_call(self, call: ToolCall, step: _Step) -> JSON:
        """Run one permitted call. A command that runs without the user's yes (it was judged
        read-only) is confined to the sandbox; its output streams as ``toolOutput``."""
        tool = self.setup.tools[call.name]
        stream = CoalescedOutput(lambda text: self.host.emit(ToolOutput(call.id, text)))
        running = _Running(time.monotonic(), LiveOutput(stream.add))
        step.running[call.id] = running
        context = replace(
            self.setup.context, sandboxed=step.read_only.get(call.id, False), live=running.output
        )
        try:
            result = await tool.run(call.input, context)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # a tool bug must not take the turn down
            result = ToolResult(f"Tool {call.name} failed: {type(err).__name__}: {err}", True)
        finally:
            stream.flush()  # an interrupted call keeps ``running`` for its partial output
        step.running.pop(call.id, None)
        ms = int((time.monotonic() - running.since) * 1000)
        return self._record(call, result, "error" if result.is_error else "ok", ms)

    def _record_interrupted(self, call: ToolCall, running: _Running | None) -> JSON:
        """An interrupted call's result: its real duration and the output it had produced."""
        if running is None:
            return self._record(
                call, ToolResult(history.INTERRUPTED_RESULT, True), "interrupted", 0
            )
        partial = running.output.text()
        text = history.INTERRUPTED_RESULT
        if partial:
            text += f" (partial output before the interrupt):\n{partial}"
        ms = int((time.monotonic() - running.since) * 1000)
        return self._record(call, ToolResult(text, True), "interrupted", ms)

    def _record(self, call: ToolCall, result: ToolResult, status: ToolStatus, ms: int) -> JSON:
        self.host.emit(ToolFinished(call.id, call.name, status, result.output, ms, result.diff))
        self.trail.append(TrailItem(call.name, status))
        if status in ("ok", "error"):
            self.tools_used += 1
            self.host.count_tools(self.tools_used)
        return tool_result_block(call.id, result.output, is_error=result.is_error)

    def _finish(
        self, call: ToolCall, step: _Step, result: ToolResult, status: ToolStatus, ms: int
    ) -> None:
        step.results[call.id] = self._record(call, result, status, ms)

    def _start(
        self,
        call: ToolCall,
        step: _Step,
        batch: int,
        concurrent: bool,
        decision: Decision | None = None,
    ) -> None:
        step.started[call.id] = call
        self.host.emit(ToolStarted(call.id, call.name, call.input, batch, concurrent, decision))

    def _skip(self, call: ToolCall, step: _Step, why: str, status: ToolStatus) -> None:
        self._start(call, step, 0, False)
        self._finish(call, step, ToolResult(why, True), status, 0)

    # --- the plan gate (exit_plan_mode, or a final text that reads as a plan) ---------------

    async def _exit_plan(self, call: ToolCall, step: _Step) -> TurnOutcome | None:
        """The approval of an exit_plan_mode call, answered as its result. Approved or revised:
        the turn goes on; rejected without feedback, or too often: the turn ends."""
        self._start(call, step, 0, False)
        plan = call.input.get("plan")
        if not isinstance(plan, str) or not plan.strip():
            why = "exit_plan_mode needs a non-empty 'plan' (markdown)."
            self._finish(call, step, ToolResult(why, True), "error", 0)
            return None
        if self.host.mode != "plan":
            self.host.emit(Notice("exit_plan_mode called outside plan mode; asking anyway"))
        match await self._ask_plan(plan):
            case Approved(mode=mode):
                self._finish(call, step, ToolResult(EXIT_APPROVED.format(mode=mode)), "ok", 0)
                return None
            case Revise(feedback=feedback):
                text = EXIT_REVISE.format(feedback=feedback)
                self._finish(call, step, ToolResult(text, True), "error", 0)
                return None
            case Declined():
                self._finish(call, step, ToolResult(EXIT_DECLINED, True), "error", 0)
                return Completed(None)
            case GaveUp(feedback=feedback, times=times):
                text = EXIT_GAVE_UP.format(feedback=feedback, times=times)
                self._finish(call, step, ToolResult(text, True), "error", 0)
                return Completed(None)

    async def _ask_plan(self, plan: str) -> PlanVerdict:
        """Put a plan to the user; the one gate (and counter) for both ways a plan comes."""
        answer = await self.setup.approver.approve_plan(self.setup.turn_id, plan)
        self.host.emit(PlanDecided(answer.approved, answer.feedback))
        self.plan_gate, verdict = self.plan_gate.decide(answer)
        match verdict:
            case Approved(mode=mode):
                self.host.set_mode(mode)
            case GaveUp(times=times):
                self.host.emit(Notice(GAVE_UP_NOTICE.format(times=times)))
            case Revise() | Declined():
                pass
        return verdict
