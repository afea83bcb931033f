"""The model's side of a step: the request, the streamed response, a fault retried, the
context compacted (when the prompt is too long, and between steps when it fills), and what
every model call of the turn cost.

Counting before sending: when a prompt may not fit (``may_not_fit``, a cheap estimate), it is
counted first (``Provider.count_tokens``, the API's ``POST /v1/messages/count_tokens``); the
count is published as the context meter at once, and a count over the compaction threshold
compacts before the request, not after its 400. The 400 path stays as the fallback.

``StepStream.respond`` is the one way a step gets its response: a ``ModelResponse``, or the
``TurnOutcome`` the turn ends with when there is none (the blocks already shown are kept).
Compaction runs only while the history ends with the last step's results (the response being
requested is not in it yet), so a tool_use is never answered twice.
"""

from __future__ import annotations

import asyncio
import enum
import json
import logging
from dataclasses import dataclass, field
from typing import Final

from tiller.core.turn import compaction
from tiller.core.turn.events import Notice, StepRestarted
from tiller.core.turn.hook_acts import hook_acts
from tiller.core.turn.outcomes import Failed, TurnOutcome
from tiller.core.turn.setup import TurnHost, TurnSetup
from tiller.core.turn.step import NOT_RUN_CUT_OFF, Draft, Step
from tiller.model import history
from tiller.model.models import price
from tiller.model.provider import CountUnsupported, ModelRequest, ModelResponse, ProviderError
from tiller.model.usage import NO_USAGE, ContextUse, Usage

log = logging.getLogger(__name__)

STEP_RETRY_KINDS = frozenset({"overloaded", "server", "connection", "timeout"})
ESTIMATE_CHARS_PER_TOKEN = 3.5  # a rough estimate, only to decide whether to count
COUNT_SHARE = 0.9  # of the compaction threshold: an estimate from there is counted


def may_not_fit(known_used: int | None, new_chars: int, all_chars: int, threshold: int) -> bool:
    """Whether to count the prompt before sending it. ``known_used``: the tokens in context
    when last measured (None: unknown, e.g. a resumed session), plus ``new_chars`` since;
    unknown, the whole prompt (``all_chars``) is estimated. Counted from ``COUNT_SHARE`` of
    the compaction ``threshold`` (tokens)."""
    if known_used is None:
        estimate = all_chars / ESTIMATE_CHARS_PER_TOKEN
    else:
        estimate = known_used + new_chars / ESTIMATE_CHARS_PER_TOKEN
    return estimate >= COUNT_SHARE * threshold


class _TooLong(enum.Enum):
    TOO_LONG = "too long"


TOO_LONG: Final = _TooLong.TOO_LONG


def _chars(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False))


@dataclass
class StepStream:
    """The model calls of one turn (fresh per turn; nothing to reset)."""

    host: TurnHost
    setup: TurnSetup
    usage: Usage = NO_USAGE  # every model call of this turn, priced (turnEnded.usage)
    context_used: int = 0  # tokens in context after the last step (0: unknown / compacted)
    compact_after: int = 0  # no threshold compaction before the history is this long again
    measured: bool = False  # context_used was measured in this turn (a step, a compaction)
    sent: history.RequestView = field(default_factory=history.RequestView)  # for_request, kept

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
        return await self.setup.provider.stream(self._request(max_tokens), draft)

    def _request(self, max_tokens: int | None) -> ModelRequest:
        s = self.setup
        return ModelRequest(
            model=s.model,
            system=s.system,
            tools=tuple(t.spec() for t in s.tools.values()),
            messages=self.sent.of(self.host.messages),
            max_tokens=max_tokens,
            thinking=s.thinking,
            server_tools=s.server_tools.definitions(self.host.mode),
        )

    def _account(self, usage: Usage, *, step: bool) -> None:
        """Price a model call, add it to the turn, tell the session (context after a step)."""
        priced = price(usage, self.setup.spec)
        self.usage = self.usage + priced
        context = ContextUse.after(usage, self.setup.spec.context_window) if step else None
        if context is not None:
            self.context_used = context.used_tokens
            self.measured = True
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

    async def count_if_large(self) -> None:
        """Before a step: count the prompt when it may not fit (``may_not_fit``), publish the
        count as the context meter, and let ``compact_if_full`` compact on it. A provider that
        cannot count, or a count that fails, leaves the size unknown (the 400 path remains)."""
        messages = self.host.messages
        if not messages or messages[-1].role != "user":
            return
        threshold = compaction.compact_at(self.setup.spec.context_window, self.setup.compact_ratio)
        if self.measured and self.context_used >= threshold:
            return  # the last step's usage is over it: compact_if_full compacts on that
        known = self.context_used if self.measured else self.setup.context_before
        request = self._request(self.setup.max_tokens)
        new_chars = _chars(list(messages[-1].content))
        all_chars = 0  # only an unknown size is estimated whole (it grows with the history)
        if known is None:
            all_chars = _chars([m.to_api() for m in messages]) + len(request.system)
            all_chars += _chars([*request.tools, *request.server_tools])
        if not may_not_fit(known, new_chars, all_chars, threshold):
            return
        counted = await self._count(request)
        if counted is None:
            return
        if counted is TOO_LONG:  # the count itself was refused as over the window
            if not await self.compact("the prompt is too long"):
                return
        else:
            self._meter(counted)
            await self.compact_if_full()
        if self.context_used == 0:  # compacted: measure the new prompt for the meter
            recounted = await self._count(self._request(self.setup.max_tokens))
            if isinstance(recounted, int):
                self._meter(recounted)

    async def _count(self, request: ModelRequest) -> int | _TooLong | None:
        """The prompt's tokens; TOO_LONG when the count was refused as over the window;
        None when unknown."""
        try:
            return await self.setup.provider.count_tokens(request)
        except CountUnsupported:
            return None
        except ProviderError as err:
            if err.kind == "context_too_long":
                return TOO_LONG
            log.info("counting the prompt failed (%s): %s", err.kind, err.message)
            return None

    def _meter(self, tokens: int) -> None:
        """The counted prompt is the context in use: known now, and shown before the reply."""
        self.context_used = tokens
        self.measured = True
        self.host.record_usage(NO_USAGE, ContextUse(tokens, self.setup.spec.context_window))

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
        fields = {"trigger": "auto", "custom_instructions": ""}
        for act in hook_acts("PreCompact", await s.hooks.run("PreCompact", self.host.mode, fields)):
            self.host.emit(act)
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
        self.measured = True
        self.host.emit(Notice(f"Compacted {done.summarized} messages into a summary."))
        return True
