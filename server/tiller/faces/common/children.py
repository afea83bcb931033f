"""Subagents as the terminal clients show them: indented lines under the ``task`` call that
started them. A child's events carry its own ``sessionId`` and a ``parentTurnId``; the
parent's ``agentStarted`` event names the child's agent kind."""

from __future__ import annotations

from dataclasses import dataclass, field

from tiller.faces.common.render import finished_line, tool_summary
from tiller.jsontypes import JSON

INDENT = "    "


def is_child_event(params: JSON) -> bool:
    """An event of a subagent (not of the session the client shows)."""
    return "parentTurnId" in params


@dataclass
class Children:
    """The subagents seen so far (child session id -> agent name) and their running calls."""

    names: dict[str, str] = field(default_factory=dict)
    calls: dict[str, str] = field(default_factory=dict)  # toolUseId -> head

    def started(self, params: JSON) -> str:
        """The parent's ``agentStarted``: the line that opens the child's block."""
        name = str(params.get("agent", "agent"))
        self.names[str(params.get("agentSessionId"))] = name
        session = params.get("agentSessionId")  # its transcript: /resume or session/transcript
        return f"  ⤷ {name} agent: {params.get('description', '')}  ({session})"

    def name(self, params: JSON) -> str:
        return self.names.get(str(params.get("sessionId")), "agent")

    def head(self, params: JSON) -> str:
        """``explore › bash sleep 1`` for a child's call (as it started)."""
        tool_id = str(params.get("toolUseId"))
        if tool_id not in self.calls:
            name = str(params.get("name", "?"))
            self.calls[tool_id] = f"{self.name(params)} › {name} " + tool_summary(
                name, params.get("input")
            )
        return self.calls[tool_id].rstrip()

    def line(self, params: JSON) -> str | None:
        """The indented line a child's event prints (None: nothing to print)."""
        match params.get("type"):
            case "toolFinished":
                head = self.head(params)
                self.calls.pop(str(params.get("toolUseId")), None)
                return INDENT + finished_line(head, params)
            case "notice":
                return f"{INDENT}{self.name(params)} · {params.get('text', '')}"
            case "confirmRequested":
                return f"{INDENT}{self.name(params)} ? {params.get('name', '?')}: asks for approval"
            case "turnEnded":
                return f"  ⤶ {self.name(params)} agent {params.get('outcome', '?')}" + tokens(
                    params.get("usage")
                )
            case _:
                return None


def asker(params: JSON) -> str:
    """Who asks in a ``tiller/confirmTool``: the tool, or ``explore agent's bash`` when a
    subagent asks (``agent``)."""
    name = str(params.get("name", "?"))
    agent = params.get("agent")
    if isinstance(agent, dict) and agent.get("name"):
        return f"{agent['name']} agent's {name}"
    return name


def tokens(usage: object) -> str:
    """`` (1200 in, 80 out)`` from a usage object, else nothing."""
    if not isinstance(usage, dict):
        return ""
    read = sum(
        v
        for k, v in usage.items()
        if k in ("inputTokens", "cacheReadTokens", "cacheWriteTokens") and isinstance(v, int)
    )
    return f" ({read} in, {usage.get('outputTokens', 0)} out)"
