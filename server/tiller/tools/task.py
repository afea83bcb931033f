"""``task``: the model hands a described job to a subagent, a child session that works on its
own and returns only its final report. The tool checks the call and bounds how many children
run at once (``maxParallelTasks``); core's ``session.subagents`` runs the child, given here as
a ``Delegation``."""

from __future__ import annotations

import asyncio
from typing import Protocol

from tiller.errors import ToolInputError
from tiller.extend.agents import GENERAL, AgentKind
from tiller.jsontypes import JSON
from tiller.tools.base import Preview, ToolContext, ToolKind, ToolResult, require_str

TASK = "task"


class Delegation(Protocol):
    """The session's side of ``task``: the agent kinds, and a job done by a child session."""

    def kinds(self) -> tuple[AgentKind, ...]: ...

    async def delegate(
        self, kind: AgentKind, description: str, prompt: str, call_id: str
    ) -> ToolResult: ...


class TaskTool:
    """``task``: delegate a described job to a child session (one per session, bound to it)."""

    name = TASK
    kind: ToolKind = "agent"

    def __init__(self, delegation: Delegation, max_parallel: int) -> None:
        self.delegation = delegation
        self.slots = asyncio.Semaphore(max_parallel)

    def _kinds(self) -> tuple[AgentKind, ...]:
        return self.delegation.kinds()

    def _kind(self, tool_input: JSON) -> AgentKind | None:
        wanted = tool_input.get("subagent_type") or GENERAL.name
        return next((k for k in self._kinds() if k.name == wanted), None)

    def spec(self) -> JSON:
        kinds = "\n".join(f"- {k.name}: {k.description}" for k in self._kinds())
        return {
            "name": TASK,
            "description": (
                "Delegate a self-contained job to a subagent: a child session with its own "
                "context that works on its own and returns only its final report. Give it "
                "everything it needs in the prompt (it does not see this conversation). Several "
                "task calls of read-only agents in one response run at the same time.\n"
                f"Agent kinds (subagent_type):\n{kinds}"
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "description": {
                        "type": "string",
                        "description": "A short (3-5 word) description of the job",
                    },
                    "prompt": {"type": "string", "description": "The job, in full"},
                    "subagent_type": {
                        "type": "string",
                        "enum": [k.name for k in self._kinds()],
                        "description": f"The agent kind (default {GENERAL.name})",
                    },
                },
                "required": ["description", "prompt"],
                "additionalProperties": False,
            },
        }

    def is_read_only(self, tool_input: JSON) -> bool:
        kind = self._kind(tool_input)
        return kind is not None and kind.read_only

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        kind = self._kind(tool_input)
        name = kind.name if kind is not None else "?"
        return Preview("text", {"text": f"{name} agent: {tool_input.get('description', '')}"})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        try:
            description = require_str(tool_input, "description") or ""
            prompt = require_str(tool_input, "prompt") or ""
        except ToolInputError as err:
            return ToolResult(err.message, True)
        kind = self._kind(tool_input)
        if kind is None:
            known = ", ".join(k.name for k in self._kinds())
            return ToolResult(f"Unknown subagent_type: the agent kinds are {known}.", True)
        if not prompt.strip():
            return ToolResult("The task needs a non-empty prompt.", True)
        async with self.slots:
            return await self.delegation.delegate(kind, description, prompt, ctx.call_id or "")
