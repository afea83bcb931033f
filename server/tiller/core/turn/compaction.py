"""Context compaction: older messages are summarized by the model; recent ones stay verbatim.

A cut never separates a tool_use from its result: it falls either at the start of a user
segment (a prompt, or a user message the loop wrote, such as "Plan approved") or, inside a
single huge turn, at the assistant message of one of the turn's last steps, with the turn's
prompt carried along verbatim. The part before the cut is rendered as a plain transcript
(every block capped, the whole within a budget of the window) and summarized by the model in
one request without tools, so the summary request itself always fits.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from tiller.jsontypes import JSON
from tiller.model import history
from tiller.model.history import Message, text_block
from tiller.model.provider import ModelRequest, ModelResponse, Provider
from tiller.model.usage import NO_USAGE, Usage
from tiller.protocol import Thinking

DEFAULT_CONTEXT_WINDOW = 200_000
COMPACT_RATIO = 0.8
KEEP_TURNS = 2
KEEP_STEPS = 2
SUMMARY_MAX_TOKENS = 4096
BLOCK_CAP = 4000  # characters of one block in the transcript to summarize
CHARS_PER_TOKEN = 3  # a cautious estimate: real text averages more
TRANSCRIPT_SHARE = 0.5  # of the window, for the transcript to summarize

SUMMARY_SYSTEM = (
    "You write the working memory of a coding agent. Summarize the conversation so far so the "
    "agent can continue without it: the user's goals and constraints, decisions made, files "
    "read or changed (with paths), commands run and their results, the current state, and "
    "what is left to do. Be specific and brief; use short markdown sections."
)
SUMMARY_PREFIX = "Summary of the earlier conversation (older turns were compacted):\n\n"
IN_TURN_PREFIX = (
    "Summary of the earlier conversation and of the first steps taken for the request below "
    "(they were compacted):\n\n"
)
ASK = "Summarize the conversation above."


def compact_at(window: int, ratio: float = COMPACT_RATIO) -> int:
    """The context size (tokens) from which the loop compacts between steps."""
    return int(window * ratio)


@dataclass(frozen=True)
class Cut:
    """``older`` is summarized; ``carried`` (the current prompt's blocks, for a cut inside a
    turn) and ``recent`` are kept verbatim."""

    older: tuple[Message, ...]
    carried: tuple[JSON, ...]
    recent: tuple[Message, ...]

    def rebuild(self, summary: str, *, keep_open_loop: bool = False) -> tuple[Message, ...]:
        """The summary, then the recent messages without their thinking blocks.

        The summary starts a new prefix: every thinking block kept after it would be bound
        to a conversation that no longer exists, and the API would refuse the next request
        (400, "bound to a different conversation"). So they are dropped here, once, and the
        new history is append-only from then on (see ``history.without_thinking`` for why
        this and not ``drop_block``, and for ``keep_open_loop``)."""
        prefix = IN_TURN_PREFIX if self.carried else SUMMARY_PREFIX
        first = Message("user", (text_block(prefix + summary), *self.carried))
        return history.without_thinking((first, *self.recent), keep_open_loop=keep_open_loop)


@dataclass(frozen=True)
class Compacted:
    messages: tuple[Message, ...]
    usage: Usage
    summarized: int  # how many messages the summary replaced


def segment_starts(messages: Sequence[Message]) -> list[int]:
    """Indexes of user messages that say something (not only tool results): a cut may fall
    there, since the message before is the assistant's and nothing is left unanswered."""
    return [
        i
        for i, m in enumerate(messages)
        if m.role == "user" and any(b.get("type") != "tool_result" for b in m.content)
    ]


def cut_between_turns(messages: Sequence[Message], keep_turns: int) -> Cut | None:
    starts = segment_starts(messages)
    if len(starts) <= keep_turns or keep_turns < 1:
        return None
    cut = starts[-keep_turns]
    if cut == 0:
        return None
    return Cut(tuple(messages[:cut]), (), tuple(messages[cut:]))


def cut_within_turn(messages: Sequence[Message], keep_steps: int) -> Cut | None:
    starts = segment_starts(messages)
    if not starts:
        return None
    start = starts[-1]
    steps = [i for i in range(start + 1, len(messages)) if messages[i].role == "assistant"]
    if len(steps) <= keep_steps:
        return None
    cut = steps[len(steps) - max(keep_steps, 1)]
    carried = tuple(b for b in messages[start].content if b.get("type") != "tool_result")
    return Cut(tuple(messages[:cut]), carried, tuple(messages[cut:]))


def choose_cut(messages: Sequence[Message], *, in_turn: bool) -> Cut | None:
    """Where to cut. Between turns (``/compact``): keep the last turns, else the current one.
    During a turn: summarize up to the turn's last steps when it has more, else every
    earlier turn."""
    if in_turn:
        return cut_within_turn(messages, KEEP_STEPS) or cut_between_turns(messages, 1)
    return (
        cut_between_turns(messages, KEEP_TURNS)
        or cut_between_turns(messages, 1)
        or cut_within_turn(messages, KEEP_STEPS)
    )


def render(messages: Sequence[Message], budget_chars: int) -> str:
    """The messages as a plain transcript, each block capped, the whole within the budget
    (the start and the end kept, the middle left out)."""
    names: dict[str, str] = {}
    lines: list[str] = []
    for message in messages:
        for block in message.content:
            line = _render_block(message.role, block, names)
            if line:
                lines.append(line)
    text = "\n\n".join(lines)
    if len(text) <= budget_chars:
        return text
    half = max(budget_chars // 2, 1)
    left_out = len(text) - 2 * half
    return f"{text[:half]}\n\n[… {left_out} characters left out …]\n\n{text[-half:]}"


def _render_block(role: str, block: JSON, names: dict[str, str]) -> str:
    match block.get("type"):
        case "text":
            return f"[{role}] {_cap(str(block.get('text', '')))}"
        case "tool_use":
            names[str(block.get("id"))] = str(block.get("name"))
            data = json.dumps(block.get("input", {}), ensure_ascii=False)
            return f"[assistant calls {block.get('name')}] {_cap(data)}"
        case "tool_result":
            name = names.get(str(block.get("tool_use_id")), "tool")
            status = "error" if block.get("is_error") else "ok"
            return f"[{name} result, {status}] {_cap(_result_text(block.get('content')))}"
        case _:
            return ""  # thinking and other blocks are not summarized


def _result_text(content: object) -> str:
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


def _cap(text: str, limit: int = BLOCK_CAP) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} [… {len(text) - 2 * half} characters left out …] {text[-half:]}"


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


async def compact(
    provider: Provider,
    model: str,
    messages: Sequence[Message],
    *,
    window: int = DEFAULT_CONTEXT_WINDOW,
    in_turn: bool = False,
) -> Compacted | None:
    """A shorter history, or None when there is nothing older to compact.

    Raises ``ProviderError`` when the summary request fails.
    """
    cut = choose_cut(messages, in_turn=in_turn)
    if cut is None:
        return None
    summary, usage = await summarize(provider, model, cut.older, window=window)
    budget_form = provider.spec(model).thinking == "budget"
    return Compacted(cut.rebuild(summary, keep_open_loop=budget_form), usage, len(cut.older))


async def summarize(
    provider: Provider,
    model: str,
    messages: Sequence[Message],
    *,
    window: int = DEFAULT_CONTEXT_WINDOW,
    focus: str | None = None,
) -> tuple[str, Usage]:
    """The model's summary of ``messages`` (rendered as a capped transcript, so the request
    always fits), and what it cost. Raises ``ProviderError`` when the request fails."""
    budget = int(window * TRANSCRIPT_SHARE * CHARS_PER_TOKEN)
    transcript = render(messages, budget)
    ask = ASK if focus is None else f"{ASK} Focus on: {focus}"
    request = ModelRequest(
        model=model,
        system=SUMMARY_SYSTEM,
        tools=(),
        messages=(Message("user", (text_block(f"{transcript}\n\n{ask}"),)),),
        max_tokens=SUMMARY_MAX_TOKENS,
        thinking=Thinking(),
    )
    collected = _Collect()
    response: ModelResponse = await provider.stream(request, collected)
    summary = "".join(collected.parts).strip() or "(the summary came back empty)"
    return summary, response.usage if response.usage is not None else NO_USAGE
