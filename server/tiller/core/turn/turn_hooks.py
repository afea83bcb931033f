"""The hooks of one turn: SessionStart (the live session's first turn) and UserPromptSubmit
before the prompt is sent, and at the end the Stop hooks, then the ``stopHook`` setting, which
may send the model back to work (at most ``MAX_CONTINUATIONS`` times in all)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tiller.core.hooks.config import HookEvent
from tiller.core.hooks.replies import Verdict
from tiller.core.hooks.stop import (
    MAX_CONTINUATIONS,
    HookBroken,
    HookContinue,
    HookPassed,
    run_stop_hook,
)
from tiller.core.turn.events import Notice
from tiller.core.turn.hook_acts import hook_acts
from tiller.core.turn.outcomes import Completed, Stopped, TurnOutcome
from tiller.core.turn.setup import TurnHost, TurnSetup
from tiller.jsontypes import JSON
from tiller.model.history import Message, text_block
from tiller.protocol import HookOutcome


def with_context(messages: tuple[Message, ...], blocks: Sequence[JSON]) -> tuple[Message, ...]:
    """The history with ``blocks`` put before the prompt, the last block of the last (not yet
    sent) user message, where the loop and the journal find it."""
    last = messages[-1]
    return (*messages[:-1], Message("user", (*last.content[:-1], *blocks, last.content[-1])))


@dataclass
class TurnHooks:
    """The hooks a turn runs, and how often they sent the model back (fresh per turn)."""

    host: TurnHost
    setup: TurnSetup
    continuations: int = 0

    async def before_prompt(
        self, prompt: JSON | None, forget_turn: Callable[[], None]
    ) -> TurnOutcome | None:
        """SessionStart (the live session's first turn) and UserPromptSubmit hooks: what they
        add goes into the prompt's message, before the prompt (not yet sent: append-only); a
        blocked prompt leaves no trace in the history and ends the turn."""
        hooks, added = self.setup.hooks, []
        if self.setup.session_start is not None:
            start = await hooks.run(
                "SessionStart", self.host.mode, {"source": self.setup.session_start}
            )
            added += self._told("SessionStart", start)
        if prompt is not None and self.setup.user_prompt:
            text = str(prompt.get("text", ""))
            verdict = await hooks.run("UserPromptSubmit", self.host.mode, {"prompt": text})
            added += self._told("UserPromptSubmit", verdict, blocked="blockedPrompt")
            if verdict.blocked or verdict.halt is not None:
                forget_turn()
                reason = verdict.reason or verdict.halt or "no reason given"
                return Stopped(f"prompt blocked by a UserPromptSubmit hook: {reason}")
        if added and prompt is not None:
            self.host.rewrite_history(with_context(self.host.messages, added))
        return None

    def _told(
        self, event: HookEvent, verdict: Verdict, blocked: HookOutcome = "fedBack"
    ) -> list[JSON]:
        """Tell the user what hooks did; the context blocks they add for the model."""
        for act in hook_acts(event, verdict, blocked=blocked):
            self.host.emit(act)
        return [text_block(f"{event} hook context:\n{text}") for text in verdict.context]

    async def at_stop(self, final: str | None) -> TurnOutcome | None:
        """Let the Stop hooks (then the ``stopHook`` setting) send the model back to work,
        at most MAX_CONTINUATIONS times in all."""
        s = self.setup
        if self.continuations >= MAX_CONTINUATIONS:
            return Completed(final)
        if s.hooks.configured("Stop"):
            active = {"stop_hook_active": self.continuations > 0}
            verdict = await s.hooks.run("Stop", self.host.mode, active)
            self._told("Stop", verdict, blocked="continued")
            if verdict.blocked and verdict.halt is None:
                self.continuations += 1
                reason = verdict.reason or "continue"
                self.host.append("user", [text_block(f"Stop hook feedback: {reason}")])
                return None
        if s.stop_hook is None:
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
                self.continuations += 1
                count = f"{self.continuations}/{MAX_CONTINUATIONS}"
                self.host.emit(Notice(f"Stop hook asks to continue ({count})"))
                self.host.append("user", [text_block(f"continue: {output}")])
                return None
            case HookBroken(reason=reason):
                self.host.emit(Notice(reason))
                return Completed(final)
