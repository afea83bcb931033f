"""Run the real ``Turn`` in process: an in-memory host, a scripted provider that can fail,
cut off, refuse or cancel at chosen points, and a probe tool. Every request it receives is
checked the way the API (our validating fake) would check it."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from fakeapi import validate_messages_request
from tiller.core.permissions.modes import Grants
from tiller.core.turn import compaction
from tiller.core.turn.approvals import AgentRef, PlanAnswer, ToolAnswer
from tiller.core.turn.events import Event
from tiller.core.turn.loop import Turn, TurnSetup
from tiller.core.turn.outcomes import TurnOutcome
from tiller.core.turn.scheduler import ToolCall
from tiller.extend.settings_layer import Settings
from tiller.extend.trust import Trust
from tiller.jsontypes import JSON
from tiller.model import history, models
from tiller.model.history import Message, text_block
from tiller.model.provider import (
    CountUnsupported,
    ModelRequest,
    ModelResponse,
    ProviderError,
    StreamListener,
    api_params,
)
from tiller.model.usage import ContextUse, Usage
from tiller.protocol import Mode, Thinking, TrailItem
from tiller.tools.base import Preview, ReadLedger, ToolContext, ToolResult
from tiller.workspace.roots import WorkspaceRoots

MODEL = "claude-sonnet-4-5"
TOOL_IDS = itertools.count()  # tool_use ids are unique across a whole history
SPEC = models.resolve(MODEL)

Kind = Literal[
    "text",
    "tools",
    "overloaded",
    "fatal",
    "fatal_silent",
    "too_long",
    "cut_tool",
    "cut_text",
    "refusal",
    "pause",
    "unknown",
    "cancel_stream",
    "cancel_tool",
    "bad_input",
    "big",
]
KINDS: tuple[Kind, ...] = (
    "text", "tools", "overloaded", "fatal", "fatal_silent", "too_long", "cut_tool", "cut_text",
    "refusal", "pause", "unknown", "cancel_stream", "cancel_tool", "bad_input", "big",
)  # fmt: skip


@dataclass
class Host:
    """A TurnHost in memory."""

    mode: Mode = "default"
    grants: Grants = Grants()
    messages: tuple[Message, ...] = ()
    events: list[Event] = field(default_factory=list)
    usage: list[tuple[Usage, ContextUse | None]] = field(default_factory=list)
    rewrites: int = 0
    steers: list[str] = field(default_factory=list)

    def set_mode(self, mode: Mode) -> None:
        self.mode = mode

    def set_grants(self, grants: Grants) -> None:
        self.grants = grants

    def append(self, role: history.Role, blocks: Sequence[JSON]) -> None:
        self.messages = history.append(self.messages, role, blocks)

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def count_tools(self, used: int) -> None:
        return None

    @property
    def trust(self) -> Trust:
        return Trust(True, "the test")

    def settings(self) -> Settings:
        """No settings files: the loop's behaviours are the mode's."""
        return Settings(Path("."), self.trust)

    def take_steers(self) -> tuple[str, ...]:
        taken = tuple(self.steers)
        self.steers.clear()
        return taken

    def rewrite_history(self, messages: tuple[Message, ...]) -> None:
        self.rewrites += 1
        self.messages = messages

    def record_usage(self, usage: Usage, context: ContextUse | None) -> None:
        self.usage.append((usage, context))


class Probe:
    """A read-only tool; ``{"cancel": true}`` interrupts the turn while it runs."""

    name = "probe"
    kind: Literal["read"] = "read"

    def spec(self) -> JSON:
        schema = {"type": "object", "properties": {"cancel": {"type": "boolean"}}}
        return {"name": "probe", "description": "Probe.", "input_schema": schema}

    def is_read_only(self, tool_input: JSON) -> bool:
        return True

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        return Preview("text", {"text": "probe"})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        if tool_input.get("cancel"):
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
            await asyncio.sleep(0)
        return ToolResult("probed")


class AllowAll:
    async def confirm_tool(
        self, turn_id: str, call: ToolCall, preview: Preview, agent: AgentRef | None = None
    ) -> ToolAnswer:
        return ToolAnswer("allow")

    async def approve_plan(self, turn_id: str, plan: str) -> PlanAnswer:
        return PlanAnswer(True)

    async def checkpoint(self, turn_id: str, tools_used: int, trail: Sequence[TrailItem]) -> bool:
        return True


def check_request(request: ModelRequest) -> None:
    """What the API (the validating fake) and ``history.problems`` say of a request."""
    body = api_params(request, SPEC)
    problem = validate_messages_request(
        body,
        reject_text_after_tool_result=True,
        text_after_results_led_by=history.UNANSWERED_RESULTS,
    )
    assert problem is None, (problem, body["messages"])
    assert history.problems(request.messages) == []


@dataclass
class Provider:
    """Plays ``script`` (one kind per model call; summaries are answered aside)."""

    script: list[Kind]
    requests: list[ModelRequest] = field(default_factory=list)
    counted: list[ModelRequest] = field(default_factory=list)
    count: int | None = None  # what count_tokens answers (None: it cannot count)

    async def count_tokens(self, request: ModelRequest) -> int:
        if self.count is None:
            raise CountUnsupported("the loop harness does not count")
        check_request(request)
        self.counted.append(request)
        return self.count

    def spec(self, model_id: str) -> models.ModelSpec:
        return SPEC

    async def list_models(self, refresh: bool = False) -> list[Any]:
        return []

    def _thought(self, listener: StreamListener) -> JSON:
        """Thinking is on: a response starts with a complete, signed thinking block."""
        block = {"type": "thinking", "thinking": "let me think", "signature": "sig"}
        listener.thinking("let me think")
        listener.block(block)
        return block

    def _tool(self, **tool_input: Any) -> JSON:
        return {"type": "tool_use", "id": f"toolu_{next(TOOL_IDS)}", "name": "probe",
                "input": tool_input}  # fmt: skip

    async def stream(self, request: ModelRequest, listener: StreamListener) -> ModelResponse:
        check_request(request)
        self.requests.append(request)
        small = Usage(100, 10, 50, 5)
        if request.system == compaction.SUMMARY_SYSTEM:
            listener.text("the summary")
            return ModelResponse((text_block("the summary"),), "end_turn", small)
        kind = self.script.pop(0) if self.script else "text"
        await asyncio.sleep(0)
        match kind:
            case "text":
                listener.text("answer")
                block = text_block("answer")
                listener.block(block)
                return ModelResponse((block,), "end_turn", small)
            case "big":  # a step that fills the context: the next step compacts first
                blocks = [self._thought(listener), text_block("reading a lot"), self._tool()]
                usage = Usage(10, 10, int(SPEC.context_window * 0.9), 0)
                return ModelResponse(tuple(blocks), "tool_use", usage)
            case "tools" | "cancel_tool" | "bad_input":
                blocks = [
                    text_block("let me look"),
                    self._tool(),
                    self._tool(cancel=kind == "cancel_tool"),
                ]
                for b in blocks:
                    listener.block(b)
                blocks.insert(0, self._thought(listener))
                errors = {blocks[2]["id"]: "input too large"} if kind == "bad_input" else {}
                return ModelResponse(tuple(blocks), "tool_use", small, input_errors=errors)
            case "overloaded" | "fatal":
                self._thought(listener)
                listener.text("partial ")
                listener.block(self._tool())
                raise ProviderError(
                    "overloaded" if kind == "overloaded" else "invalid_request", kind
                )
            case "fatal_silent":
                raise ProviderError("invalid_request", "bad request")
            case "too_long":
                raise ProviderError("context_too_long", "prompt is too long: 300000 > 200000")
            case "cut_tool":
                blocks = [self._thought(listener), text_block("writing"), self._tool()]
                return ModelResponse(
                    tuple(blocks), "max_tokens", small, None, {blocks[2]["id"]: "cut"}
                )
            case "cut_text":
                listener.text("a long answer that")
                return ModelResponse((text_block("a long answer that"),), "max_tokens", small)
            case "refusal":
                listener.text("I won't")
                details = {"type": "refusal", "category": "cyber", "explanation": "no"}
                return ModelResponse((text_block("I won't"),), "refusal", small, details)
            case "pause":
                return ModelResponse(
                    (self._thought(listener), text_block("searching")), "pause_turn", small
                )
            case "unknown":
                return ModelResponse((text_block("hm"),), "brand_new_reason", small)
            case "cancel_stream":
                self._thought(listener)
                listener.text("half")
                listener.block(self._tool())
                task = asyncio.current_task()
                assert task is not None
                task.cancel()
                await asyncio.sleep(0)
                raise AssertionError("not reached")


def setup(provider: Provider, turn_id: str = "turn_1", **overrides: Any) -> TurnSetup:
    fields: dict[str, Any] = {
        "turn_id": turn_id,
        "model": MODEL,
        "thinking": Thinking(True, 2048),
        "max_tokens": 4096,
        "system": "You are a test.",
        "tools": {"probe": Probe()},
        "context": ToolContext(WorkspaceRoots.of(Path("/nonexistent")), ReadLedger()),
        "provider": provider,
        "approver": AllowAll(),
        "tool_budget": 0,
        "retry_delays": (0.0, 0.0),
        **overrides,
    }
    return TurnSetup(**fields)


async def run_turn(
    host: Host, provider: Provider, prompt: str, **overrides: Any
) -> tuple[Turn, TurnOutcome]:
    """Append the prompt as the session does, and run the turn as its own task."""
    host.append("user", [text_block(prompt)])
    turn = Turn(host, setup(provider, **overrides))
    outcome: TurnOutcome = await asyncio.create_task(turn.run())
    return turn, outcome
