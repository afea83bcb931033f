"""Subagents: the ``task`` tool hands a described job to a child session of the same core.

A child is a real ``Session`` with its own id, history, tools, model and mode, stored with its
parent's id and the parent's turn that started it. Its turn is a real ``Turn``; its events are
journaled in its own transcript and forwarded live to the parent's sink with their
``parentTurnId``, after an ``agentStarted`` event in the parent that links the ``task`` call to
the child's session. The parent's model sees only the child's final report (capped).

Rights: a child never has more than its parent. Its tools are its kind's tools that the parent
has, never ``task`` (no grandchildren), ``enter_plan_mode``, ``exit_plan_mode`` or
``todo_write`` (the board is the parent's); ``skill`` is one (an explorer's too, as Claude
Code's subagents load skills), and a child without it (a kind whose ``tools`` leave it out) is
not told of the skills (``skills.without_skills``). It starts with the parent's session grants;
its calls go through the same permission gate in its own mode: an explorer (a read-only kind) runs
in plan mode, so only reads and provably read-only commands run (sandboxed); any other child
runs in the parent's mode and follows it when it changes. Its final text is its report, never
a plan. Its questions go to the parent's approver, naming the child (``confirmTool.agent``).

Parallel: a ``task`` call of a read-only kind only reads, so a run of them is one concurrent
batch like any read-only calls. A general agent may write anywhere its parent may, and the
scope of its writes cannot be known before it runs, so it runs alone, like any call that may
write. ``maxParallelTasks`` bounds how many children of one session run at once.

Interrupt: ``tiller/interrupt`` with a child's turn id ends that child alone (its ``task``
call is answered with an error result, the parent goes on); interrupting the parent cancels
its running ``task`` calls, each of which interrupts its child and waits until the child's
history is repaired. Usage: a child's usage is added to the parent's turn and session.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from tiller.core.session import turns
from tiller.core.session.session import Session, SessionSink, new_id
from tiller.core.turn.approvals import (
    PLAN_NOT_APPROVED,
    AgentRef,
    Approver,
    CheckpointAnswer,
    PlanAnswer,
    ToolAnswer,
)
from tiller.core.turn.events import AgentStarted, Posted, TurnEnded
from tiller.core.turn.outcomes import Completed, Failed, Interrupted, Refused, Stopped
from tiller.core.turn.scheduler import ToolCall
from tiller.core.turn.system_prompt import system_prompt
from tiller.extend.agents import BUILT_IN, AgentKind
from tiller.extend.skills import without_skills
from tiller.model.history import INTERRUPTED_RESULT
from tiller.protocol import Mode, State, Todo, TrailItem
from tiller.tools.base import (
    Preview,
    Tool,
    ToolResult,
)
from tiller.tools.skill import SKILL
from tiller.tools.task import TASK
from tiller.workspace.store import SessionRow

NOT_FOR_CHILDREN = frozenset({TASK, "enter_plan_mode", "exit_plan_mode", "todo_write"})
REPORT_CAP = 8 * 1024  # bytes of a child's report handed to the parent's model
NO_REPORT = "(The agent ended without a report.)"


@dataclass
class ChildSink:
    """A child's sink: its events go on to the parent's face (its state and board do not: the
    face shows the parent's); its ``turnEnded`` settles ``ended``."""

    parent: SessionSink
    ended: asyncio.Future[TurnEnded]

    def event(self, posted: Posted) -> None:
        self.parent.event(posted)
        if isinstance(posted.event, TurnEnded) and not self.ended.done():
            self.ended.set_result(posted.event)

    def state(self, state: State) -> None:
        return None

    def todos(self, todos: tuple[Todo, ...]) -> None:
        return None


@dataclass(frozen=True)
class ChildApprover:
    """The parent's approver, asked on the child's behalf and naming it."""

    inner: Approver
    agent: AgentRef

    async def confirm_tool(
        self, turn_id: str, call: ToolCall, preview: Preview, agent: AgentRef | None = None
    ) -> ToolAnswer:
        return await self.inner.confirm_tool(turn_id, call, preview, agent or self.agent)

    async def approve_plan(self, turn_id: str, plan: str) -> PlanAnswer:
        return PLAN_NOT_APPROVED  # a child never presents a plan (it has no exit_plan_mode)

    async def checkpoint(
        self, turn_id: str, tools_used: int, trail: Sequence[TrailItem]
    ) -> CheckpointAnswer:
        return await self.inner.checkpoint(turn_id, tools_used, trail)


def child_tools(parent_tools: Sequence[Tool], kind: AgentKind) -> list[Tool]:
    """The kind's tools that the parent has (in the parent's order), never the ones only the
    parent may call."""
    allowed = None if kind.tools is None else set(kind.tools)
    return [
        tool
        for tool in parent_tools
        if tool.name not in NOT_FOR_CHILDREN and (allowed is None or tool.name in allowed)
    ]


def child_mode(parent_mode: Mode, kind: AgentKind) -> Mode:
    """An explorer only reads: plan mode's gate denies the rest. Others: the parent's mode."""
    return "plan" if kind.read_only else parent_mode


def spawn(parent: Session, kind: AgentKind, sink: SessionSink, description: str) -> Session:
    """A child session of ``parent``'s running turn, stored at once (before its first event)."""
    child_id = new_id("ses")
    model = kind.model or parent.model
    thinking = (
        parent.thinking if model == parent.model else parent.provider.spec(model).default_thinking()
    )
    base = parent.system or system_prompt(parent.roots)
    tools = child_tools(parent.tools, kind)
    if not any(tool.name == SKILL for tool in tools):
        base = without_skills(base)
    child = Session(
        config=parent.config,
        roots=parent.roots,
        provider=parent.provider,
        approver=ChildApprover(parent.approver, AgentRef(child_id, kind.name)),
        sink=sink,
        tools=tools,
        store=parent.store,
        checkpoints=None,  # the parent's turn snapshot covers the workspace the child writes
        shell=parent.shell,
        editor=parent.editor,
        terminal=parent.terminal,
        id=child_id,
        mode=child_mode(parent.mode, kind),
        model=model,
        thinking=thinking,
        grants=parent.grants,
        # The kind's prompt first: the instruction file stays the end of the prompt, where
        # the check for an edited AGENTS.md / CLAUDE.md reads it (system_prompt.py).
        system=f"{kind.prompt}\n\n{base}" if kind.prompt else base,
        agent=kind,
        parent_turn_id=parent.turn_id,
        trust=parent.trust,
    )
    now = time.time()
    parent.store.create(
        SessionRow(
            child.id, str(child.workspace), description[:80], parent.id, now, now, child.model,
            child.mode, child.thinking, (), 0, system=child.system,
            parent_turn_id=parent.turn_id, agent=kind.name,
        )
    )  # fmt: skip
    return child


def report(kind: AgentKind, ended: TurnEnded) -> ToolResult:
    """What the parent's model gets of a child's turn: its final text (capped), or an error."""
    name = kind.name
    match ended.outcome:
        case Completed(final=final):
            return ToolResult(cap_report(final or NO_REPORT), usage=ended.usage)
        case Interrupted(cause="server_stopped"):
            why = f"{INTERRUPTED_RESULT} (the server stopped while the {name} agent worked)"
        case Interrupted():
            why = f"{INTERRUPTED_RESULT}: the {name} agent was stopped before it finished."
        case Stopped():
            why = f"The {name} agent was stopped at a checkpoint before it finished."
        case Failed(kind=kind_of_failure, message=message):
            why = f"The {name} agent failed ({kind_of_failure}): {message}"
        case Refused():
            why = f"The {name} agent's model declined the job."
    return ToolResult(why, is_error=True, usage=ended.usage)


def cap_report(text: str, limit: int = REPORT_CAP) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    marker = f"\n… [report cut: {len(data)} bytes in all, the first {limit} kept]"
    return data[: limit - len(marker.encode("utf-8"))].decode("utf-8", "ignore") + marker


class Subagents:
    """What the ``task`` tool of one session delegates to: the agent kinds it may start and
    the child session that does a job (``tools.task.Delegation``)."""

    def __init__(self, parent: Session) -> None:
        self.parent = parent

    def kinds(self) -> tuple[AgentKind, ...]:
        agents = self.parent.agents
        return BUILT_IN if agents is None else agents.kinds

    async def delegate(
        self, kind: AgentKind, description: str, prompt: str, call_id: str
    ) -> ToolResult:
        parent = self.parent
        ended: asyncio.Future[TurnEnded] = asyncio.get_running_loop().create_future()
        child = spawn(parent, kind, ChildSink(parent.sink, ended), description)
        parent.emit(AgentStarted(call_id, child.id, kind.name, description))
        parent.children[child.id] = child
        try:
            await turns.prompt(child, prompt)
            done = await ended
        except asyncio.CancelledError:  # the parent's turn is interrupted: its child first
            child.interrupt()
            done = await asyncio.shield(ended)
            if done.usage is not None:
                parent.record_usage(done.usage, None)
            raise
        finally:
            parent.children.pop(child.id, None)
            child.closed = True
        return report(kind, done)
