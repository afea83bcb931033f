"""One turn of the agent: stream a model response, run its tool calls, repeat.

Reads top to bottom: ``run`` -> ``_step`` -> ``StepStream.respond`` (``step_stream.py``:
stream, retry what can be retried) -> the stop reason, matched once in ``_step`` ->
``ToolRunner.execute`` (``step_tools.py``) / ``_final``. Every way a turn ends is a
``TurnOutcome`` value; the history is left valid whatever happens.

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
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from tiller.core.turn.events import Notice, PlanDecided, Steered
from tiller.core.turn.outcomes import Completed, Failed, Interrupted, Refused, TurnOutcome
from tiller.core.turn.plan_gate import (
    GAVE_UP_NOTICE,
    Approved,
    Declined,
    GaveUp,
    PlanGate,
    PlanVerdict,
    Revise,
)
from tiller.core.turn.scheduler import ToolCall
from tiller.core.turn.setup import TurnHost, TurnSetup
from tiller.core.turn.step import (
    NOT_RUN_CUT_OFF,
    NOT_RUN_ENDED,
    NOT_RUN_OUTPUT_LIMIT,
    NOT_RUN_UNKNOWN_STOP,
    Draft,
    Step,
)
from tiller.core.turn.step_stream import StepStream
from tiller.core.turn.step_tools import ToolRunner
from tiller.core.turn.turn_hooks import TurnHooks
from tiller.jsontypes import JSON
from tiller.model import history
from tiller.model.history import Message, text_block
from tiller.model.provider import ModelResponse
from tiller.model.usage import Usage
from tiller.protocol import TrailItem

__all__ = ["Turn", "TurnHost", "TurnSetup"]

PROMPT_NOT_KEPT = "(The prompt was not added to the conversation: send it again.)"
CONTINUE_PROMPT = "Your answer was cut off at the output limit. Continue exactly where you stopped."
MAX_TEXT_CONTINUATIONS = 1  # automatic "continue" after an answer cut off at the output limit
MAX_PAUSES = 8  # pause_turn continuations per turn


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
    plan_gate: PlanGate = PlanGate()  # the exit_plan_mode answers of this turn
    text_continuations: int = 0
    pauses: int = 0
    prompt: JSON | None = None
    kept: bool = True  # False once the turn left the history as it was before its prompt
    stream: StepStream = field(init=False)  # the model's side: responses, compaction, usage
    tools: ToolRunner = field(init=False)  # the calls' side: permissions, runs, the trail
    hooks: TurnHooks = field(init=False)  # SessionStart, UserPromptSubmit, Stop

    def __post_init__(self) -> None:
        self.stream = StepStream(self.host, self.setup)
        self.tools = ToolRunner(self.host, self.setup, self._ask_plan)
        self.hooks = TurnHooks(self.host, self.setup)

    @property
    def trail(self) -> list[TrailItem]:
        """The calls of this turn and how each ended (turnEnded.trail)."""
        return self.tools.trail

    @property
    def usage(self) -> Usage:
        """Every model call of this turn, priced, its subagents' included (turnEnded.usage)."""
        return self.stream.usage + self.tools.usage

    async def run(self) -> TurnOutcome:
        """Run until the model ends without tool calls, or the turn is stopped or fails.

        The user's prompt is already the last message of the history.
        """
        self.prompt = _prompt_of(self.host.messages)
        step: Step | None = None
        try:
            blocked = await self.hooks.before_prompt(self.prompt, self._forget_turn)
            if blocked is not None:
                return blocked
            while True:
                step = Step(Draft(self.host, web_fetch_by=self.setup.web_fetch_by))
                outcome = await self._step(step)
                if outcome is not None:
                    return self._settle(outcome)
                self._deliver_steers()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            if step is not None:
                self.tools.answer_interrupted(step)
                step.finish(history.INTERRUPTED_RESULT)
            return Interrupted()

    def _deliver_steers(self) -> None:
        """At a step boundary (the history ends with the user's side: tool results, or a
        continue prompt; not after a pause_turn), what the user sent while the turn ran goes
        into that user message, and ``steered`` says it was delivered."""
        messages = self.host.messages
        if not messages or messages[-1].role != "user":
            return
        steers = self.host.take_steers()
        if not steers:
            return
        self.host.append("user", [history.steer_block(text) for text in steers])
        for text in steers:
            self.host.emit(Steered(text))

    def _settle(self, outcome: TurnOutcome) -> TurnOutcome:
        """A refused turn, or one that failed before any reply, leaves the history as it was
        before its prompt (the docs: reset the context after a refusal)."""
        match outcome:
            case Refused():
                self._forget_turn()
            case Failed(kind=kind, message=message) if not self._replied():
                self._forget_turn()
                # Those messages say what to do: send a shorter prompt; set the API key.
                if kind not in ("context_too_long", "auth"):
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
        """The history as before this turn's prompt: the model never answered it (or refused
        it); the turn is not counted as one of the session's (the transcript keeps it)."""
        self.kept = False
        if self.prompt is not None:
            self.host.rewrite_history(history.without_turn(self.host.messages, self.prompt))

    async def _step(self, step: Step) -> TurnOutcome | None:
        """One model response and what it asks for; None when the turn goes on."""
        await self.stream.count_if_large()
        await self.stream.compact_if_full()
        max_tokens = self.setup.max_tokens
        more_room_tried = False
        while True:
            response = await self.stream.respond(step, max_tokens)
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
                    self.stream.restart(step, "output_limit")
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
            self.tools.skip(call, step, response.input_errors[call.id], "error")
        runnable = [c for c in calls if c.id not in response.input_errors]
        outcome = await self.tools.execute(runnable, step)
        step.finish(NOT_RUN_ENDED)
        return outcome

    # --- the stop reasons -------------------------------------------------------------------

    async def _more_room(self, response: ModelResponse, max_tokens: int | None) -> _Room | None:
        """A call was cut off: room for one more try — the model's max output, or a compacted
        context when the context window was what ran out; None when there is none."""
        if response.stop_reason == "model_context_window_exceeded":
            compacted = await self.stream.compact("the context window is full")
            return _Room(max_tokens) if compacted else None
        limit = self.setup.spec.max_output
        if max_tokens is not None and max_tokens < limit:
            self.host.emit(
                Notice(f"A tool call hit the output limit ({max_tokens} tokens): retrying with "
                       f"{limit}")
            )  # fmt: skip
            return _Room(limit)
        return None

    def _cut_off(self, step: Step, response: ModelResponse, max_tokens: int | None) -> TurnOutcome:
        """A call cut off at the output limit even with the most room: answered, never run."""
        limit = f"{max_tokens or self.setup.spec.max_output} tokens"
        if response.stop_reason == "model_context_window_exceeded":
            limit = f"the {self.setup.spec.context_window}-token context window"
        content = _kept_content(response)
        step.commit_assistant(content)
        calls = _calls(content)
        for call in calls[:-1]:
            self.tools.skip(call, step, NOT_RUN_CUT_OFF, "skipped")
        self.tools.skip(calls[-1], step, NOT_RUN_OUTPUT_LIMIT.format(limit=limit), "error")
        step.finish(NOT_RUN_CUT_OFF)
        return Failed(
            "output_limit",
            f"The model's tool call did not fit in its output limit ({limit}); it was not run. "
            "Ask for smaller pieces (e.g. write a long file in parts).",
            False,
        )

    def _truncated_text(
        self, step: Step, response: ModelResponse, max_tokens: int | None
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

    def _end_early(self, step: Step, response: ModelResponse, reason: str, why: str) -> TurnOutcome:
        """End the turn as completed with what the response said; its calls are not run."""
        step.commit_assistant(_kept_content(response))
        step.finish(NOT_RUN_UNKNOWN_STOP.format(reason=reason))
        self.host.emit(Notice(why))
        return Completed(_text(response.content) or None)

    # --- the end of a turn ------------------------------------------------------------------

    async def _final(self, response: ModelResponse) -> TurnOutcome | None:
        """A final text ends the turn as an answer, in plan mode too (mode unchanged): only a
        plan the model presents with ``exit_plan_mode`` is put to the user."""
        return await self.hooks.at_stop(_text(response.content) or None)

    # --- the plan gate (exit_plan_mode) -----------------------------------------------------

    async def _ask_plan(self, plan: str) -> PlanVerdict:
        """Put a plan to the user; the one gate (and revision counter) of the turn."""
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
