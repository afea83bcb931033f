"""Context compaction: older turns are summarized by the model; recent turns stay verbatim."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from . import history
from .history import JSON, Message, text_block
from .protocol import Thinking
from .provider import ModelRequest, Provider

CONTEXT_WINDOW_TOKENS = 200_000
COMPACT_AT = int(CONTEXT_WINDOW_TOKENS * 0.8)
KEEP_TURNS = 2
SUMMARY_MAX_TOKENS = 4096

SUMMARY_SYSTEM = (
    "You write the working memory of a coding agent. Summarize the conversation so far so the "
    "agent can continue without it: the user's goals and constraints, decisions made, files "
    "read or changed (with paths), commands run and their results, the current state, and "
    "what is left to do. Be specific and brief; use short markdown sections."
)
SUMMARY_PREFIX = "Summary of the earlier conversation (older turns were compacted):\n\n"


@dataclass
class _Collect:
    """A StreamListener that keeps the summary text and shows nothing."""

    parts: list[str] = field(default_factory=list)

    def text(self, delta: str) -> None:
        self.parts.append(delta)

    def thinking(self, delta: str) -> None:
        return None

    def block(self, block: JSON) -> None:
        return None

    def notice(self, text: str) -> None:
        return None


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """Indexes of user messages that begin a turn (not tool results of the step before)."""
    return [
        i
        for i, m in enumerate(messages)
        if m.role == "user" and not any(b.get("type") == "tool_result" for b in m.content)
    ]


def split_for_compaction(
    messages: Sequence[Message], keep_turns: int = KEEP_TURNS
) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
    """(older, recent): ``recent`` holds the last ``keep_turns`` turns, ``older`` the rest."""
    starts = turn_starts(messages)
    cut = starts[-keep_turns] if len(starts) >= keep_turns else 0
    return tuple(messages[:cut]), tuple(messages[cut:])


async def compact(
    provider: Provider,
    model: str,
    tools: tuple[JSON, ...],
    messages: Sequence[Message],
    keep_turns: int = KEEP_TURNS,
) -> tuple[Message, ...] | None:
    """A shorter history, or None when there is nothing older to compact."""
    older, recent = split_for_compaction(messages, keep_turns)
    if not older:
        return None
    ask = history.append(
        history.repair(older), "user", [text_block("Summarize the conversation above.")]
    )
    request = ModelRequest(
        model=model,
        system=SUMMARY_SYSTEM,
        tools=tools,
        messages=ask,
        max_tokens=SUMMARY_MAX_TOKENS,
        thinking=Thinking(),
    )
    collected = _Collect()
    await provider.stream(request, collected)
    summary = "".join(collected.parts).strip() or "(the summary came back empty)"
    return history.repair((Message("user", (text_block(SUMMARY_PREFIX + summary),)), *recent))
