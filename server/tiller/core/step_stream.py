"""The model's side of a step: the request, the streamed response, a fault retried, the
context compacted (when the prompt is too long, and between steps when it fills), and what
every model call of the turn cost.

``StepStream.respond`` is the one way a step gets its response: a ``ModelResponse``, or the
``TurnOutcome`` the turn ends with when there is none (the blocks already shown are kept).
Compaction runs only while the history ends with the last step's results (the response being
requested is not in it yet), so a tool_use is never answered twice.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from tiller.core import compaction, history
from tiller.core.events import Notice, StepRestarted
from tiller.core.outcomes import Failed, TurnOutcome
from tiller.core.step import NOT_RUN_CUT_OFF, Draft, Step
from tiller.core.turn_setup import TurnHost, TurnSetup
from tiller.model.models import price
from tiller.model.provider import ModelRequest, ModelResponse, ProviderError
from tiller.model.usage import NO_USAGE, ContextUse, Usage

STEP_RETRY_KINDS = frozenset({"overloaded", "server", "connection", "timeout"})


@dataclass
class StepStream:
    """The model calls of one turn (fresh per turn; nothing to reset)."""

    host: TurnHost
    setup: TurnSetup
    usage: Usage = NO_USAGE  # every model call of this turn, priced (turnEnded.usage)
    context_used: int = 0  # tokens in context after the last step (0: unknown / compacted)
    compact_after: int = 0  # no threshold compaction before the history is this long again

    # --- one response: stream, and retry what can be retried ------------------------------

    async def respond(self, step: Step, max_tokens: int | None) -> ModelResponse | TurnOutcome:
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
                    if await self.compact("the prompt is too long"):
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
                    self.restart(step, err.kind)
                    continue
                return self._failed(step, err)
            except Exception as err:  # an SDK surprise must not lose what was shown
                return self._failed(step, ProviderError("internal", f"{type(err).__name__}: {err}"))
            self._account(response.usage, step=True)
            return response

    def restart(self, step: Step, reason: str) -> None:
        """Tell clients to discard the step's partial output; it is streamed again."""
        self.host.emit(StepRestarted(reason))
        step.restart()

    async def _stream(self, draft: Draft, max_tokens: int | None) -> ModelResponse:
        s = self.setup
        request = ModelRequest(
            model=s.model,
            system=s.system,
            tools=tuple(t.spec() for t in s.tools.values()),
            messages=history.for_request(self.host.messages),
            max_tokens=max_tokens,
            thinking=s.thinking,
            server_tools=s.server_tools.definitions(self.host.mode),
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

    def _failed(self, step: Step, err: ProviderError) -> TurnOutcome:
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

    # --- compaction (between steps only) --------------------------------------------------

    async def compact_if_full(self) -> None:
        """Before a step: compact when the last step left the context over the threshold.
        Runs only here, when the history ends with the last step's results. When nothing
        could be compacted, it is tried again only after another step."""
        window = self.setup.spec.context_window
        messages = self.host.messages
        full = self.context_used >= compaction.compact_at(window, self.setup.compact_ratio)
        between_steps = bool(messages) and messages[-1].role == "user"
        if not (full and between_steps and len(messages) >= self.compact_after):
            return
        if not await self.compact(f"{self.context_used} of {window} tokens in use"):
            self.compact_after = len(self.host.messages) + 2

    async def compact(self, why: str) -> bool:
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
