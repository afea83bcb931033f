"""The ``skill`` tool: the model loads a skill's instructions by name (``extend/skills.py``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from tiller.extend.confined_material import Refused
from tiller.extend.skills import read_skills
from tiller.jsontypes import JSON
from tiller.tools.base import Preview, ToolContext, ToolKind, ToolResult

SKILL = "skill"


@dataclass(frozen=True)
class SkillTool:
    name: str = SKILL
    kind: ToolKind = "read"

    def spec(self) -> JSON:
        return {
            "name": self.name,
            "description": (
                "Load a skill's instructions by its name (the skills are listed in the system "
                "prompt or in a later message). The answer has the instructions and the skill's "
                "folder, where any files it mentions are."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "description": "the skill's name"}
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        }

    def is_read_only(self, tool_input: JSON) -> bool:
        return True

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        return Preview("text", {"text": f"load skill {tool_input.get('name')}"})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        name = str(tool_input.get("name", ""))
        skills, _told = await asyncio.to_thread(read_skills, ctx.workspace)
        skill = skills.get(name)
        if skill is None:
            known = ", ".join(sorted(skills)) or "none"
            return ToolResult(f"No skill named {name!r}. Skills: {known}", True)
        try:
            body = await asyncio.to_thread(skill.body)
        except OSError as err:
            return ToolResult(f"Skill {name!r} cannot be read: {err.strerror or err}", True)
        if isinstance(body, Refused):
            return ToolResult(f"Skill {name!r} cannot be loaded: {body.notice}", True)
        return ToolResult(
            f"Skill {name} (folder: {skill.folder}; read its files from there)\n\n{body}"
        )
