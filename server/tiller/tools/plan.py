"""enter_plan_mode and exit_plan_mode. The loop itself runs the exit gate (the approval)."""

from __future__ import annotations

from dataclasses import dataclass

from tiller.jsontypes import JSON
from tiller.tools.base import Preview, ToolContext, ToolKind, ToolResult


@dataclass(frozen=True)
class EnterPlanMode:
    name: str = "enter_plan_mode"
    kind: ToolKind = "state"

    def spec(self) -> JSON:
        return {
            "name": self.name,
            "description": (
                "Switch to plan mode before a non-trivial change: explore with read-only tools, "
                "then present a plan with exit_plan_mode. Writes are denied until approved."
            ),
            "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
        }

    def is_read_only(self, tool_input: JSON) -> bool:
        return False

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        return Preview("text", {"text": "enter plan mode"})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        ctx.controls.enter_plan_mode()
        return ToolResult(
            "Plan mode is on: explore with read-only tools, "
            "then call exit_plan_mode with your plan."
        )


@dataclass(frozen=True)
class ExitPlanMode:
    name: str = "exit_plan_mode"
    kind: ToolKind = "plan_exit"

    def spec(self) -> JSON:
        return {
            "name": self.name,
            "description": (
                "Present your plan (markdown) for the user's approval: in plan mode this is how "
                "a plan is presented. Nothing else in the same response runs. Approved: "
                "implement it. Rejected: revise it with the feedback and call this again."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "plan": {
                        "type": "string",
                        "minLength": 1,
                        "pattern": r"\S",
                        "description": "The plan, markdown.",
                    }
                },
                "required": ["plan"],
                "additionalProperties": False,
            },
        }

    def is_read_only(self, tool_input: JSON) -> bool:
        return False

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        return Preview("text", {"text": str(tool_input.get("plan", ""))})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        # Never reached: the loop handles this call as the plan approval gate.
        return ToolResult("exit_plan_mode is handled by the approval gate", is_error=True)
