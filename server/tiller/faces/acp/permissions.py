"""The core's ``Approver`` answered with ACP ``session/request_permission``. Fail closed.

- a confirmation, on the tool call the editor already shows: allow once; for the rest of this
  session (every edit; that exact command; that MCP tool); for a command in a trusted folder,
  always (a rule written to ``.tiller/settings.local.json``); reject. The names say which,
  since the kind alone cannot (``allow_always`` is the nearest for both of the last two);
- a plan: "Yes, then accept edits" (mode acceptEdits) / "Yes, then ask before edits"
  (mode default) / "No, keep planning", on the ``exit_plan_mode`` call (or, were none open,
  on a "plan" call made for the occasion);
- a tool-budget checkpoint: continue / stop, on a call made for the occasion.

An error, a malformed answer or an unknown option means no. A ``cancelled`` outcome means
"the prompt turn was cancelled" (the schema's words): the turn is interrupted at once, as by
``session/cancel`` (which may arrive later, or never), and its prompt answers ``cancelled``.
When the turn is interrupted while the question is open, the waiting request is dropped (a
late answer is ignored) and the interrupt goes on.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from acp.helpers import (
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
    ToolKind,
)

from tiller.core.permissions.rule_files import LOCAL_RULES
from tiller.core.turn.approvals import (
    DENIED_BY_DEFAULT,
    PLAN_NOT_APPROVED,
    AgentRef,
    PlanAnswer,
    ToolAnswer,
)
from tiller.core.turn.scheduler import ToolCall
from tiller.faces.acp.outbox import Outbox
from tiller.faces.acp.updates import ToolCalls, ToolContent, describe_tool, located
from tiller.protocol import MODE_WORDS, TrailItem
from tiller.tools.base import Preview
from tiller.workspace.roots import WorkspaceRoots

log = logging.getLogger(__name__)

PLAN_OPTIONS = (  # the modes by their words (MODE_WORDS), as everywhere else
    PermissionOption(
        option_id="acceptEdits", name=f"Yes, then {MODE_WORDS['acceptEdits']}", kind="allow_always"
    ),
    PermissionOption(
        option_id="default", name=f"Yes, then {MODE_WORDS['default']}", kind="allow_once"
    ),
    PermissionOption(option_id="plan", name="No, keep planning", kind="reject_once"),
)
CHECKPOINT_OPTIONS = (
    PermissionOption(option_id="continue", name="Continue", kind="allow_once"),
    PermissionOption(option_id="stop", name="Stop here", kind="reject_once"),
)


def tool_options(call: ToolCall, trusted: bool) -> tuple[PermissionOption, ...]:
    """Allow once; what "for this session" allows of this tool (the core's ``allowSession``:
    every edit, that exact command, that MCP tool; other tools are not offered it: it would
    allow nothing more); for a command in a trusted folder, a rule kept in the local settings
    file (``allowAlways``: in an untrusted folder that file grants nothing); reject. The tool
    call above the question shows the command or the diff, so the names need not repeat it."""
    remember: list[PermissionOption] = []
    if call.name == "bash":
        remember.append(_remember("allowSession", "Allow this command for this session"))
        if trusted:
            always = f"Always allow this command (writes a rule to {LOCAL_RULES})"
            remember.append(_remember("allowAlways", always))
    elif call.name in ("write_file", "edit_file"):
        remember.append(_remember("allowSession", "Allow all edits for this session"))
    elif call.name.startswith("mcp__"):
        server, _, tool = call.name.removeprefix("mcp__").partition("__")
        remember.append(_remember("allowSession", f"Allow {tool} from {server} for this session"))
    return (
        PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
        *remember,
        PermissionOption(option_id="deny", name="Reject", kind="reject_once"),
    )


def _remember(option_id: str, name: str) -> PermissionOption:
    """An answer kept beyond this call: ``allow_always``, the only kind ACP has for it (a
    client that shows the kind rather than the name then says more than is granted, never
    less)."""
    return PermissionOption(option_id=option_id, name=name, kind="allow_always")


def preview_content(preview: Preview, workspace: Path | WorkspaceRoots) -> list[ToolContent]:
    """The confirmation preview: a full before/after diff, the command, or text."""
    fields = preview.fields
    match preview.kind:
        case "diff":
            path = str(located(fields.get("path", ""), workspace))
            return [tool_diff_content(path, fields.get("after", ""), fields.get("before", ""))]
        case "command":
            return [tool_content(text_block(f"```sh\n{fields.get('command', '')}\n```"))]
        case "text":
            return [tool_content(text_block(fields.get("text", "")))]


def chosen(answer: RequestPermissionResponse) -> str | None:
    """The option id the user picked; None when the request was cancelled."""
    outcome = answer.outcome
    return outcome.option_id if isinstance(outcome, AllowedOutcome) else None


class AcpApprover:
    """One per ACP session; shares the session's outbox and tool-call views."""

    def __init__(
        self,
        client: Client,
        session_id: str,
        outbox: Outbox,
        calls: ToolCalls,
        checkpoint_timeout: float,
        cancelled: Callable[[], None],
        trusted: Callable[[], bool] = lambda: False,
    ) -> None:
        self.client = client
        self.session_id = session_id
        self.outbox = outbox
        self.calls = calls
        self.checkpoint_timeout = checkpoint_timeout
        self.cancelled = cancelled  # interrupts the turn: the answer was "cancelled"
        self.trusted = trusted  # whether the folder is trusted now: may a rule be kept?
        self._ids = itertools.count(1)

    async def _ask(
        self,
        tool_call: ToolCallUpdate,
        options: Sequence[PermissionOption],
        timeout: float | None = None,
    ) -> str | None:
        """The chosen option id, or None for no answer (error, cancelled, malformed). A
        ``cancelled`` answer interrupts the turn: this call then raises CancelledError."""
        await self.outbox.flush()  # the editor has seen the tool call before the question
        try:
            answer = await asyncio.wait_for(
                self.client.request_permission(
                    session_id=self.session_id, tool_call=tool_call, options=list(options)
                ),
                timeout,
            )
        except TimeoutError:
            log.warning("request_permission unanswered after %ss: no", timeout)
            return None
        except asyncio.CancelledError:
            raise
        except Exception as err:
            log.warning("request_permission failed, counting it as no: %s", err)
            return None
        picked = chosen(answer)
        if picked is None:  # outcome "cancelled": the prompt turn was cancelled
            log.info("request_permission answered cancelled: cancelling the turn")
            self.cancelled()
            await asyncio.sleep(0)  # the interrupt lands here, as if it came while asking
            return None
        if picked not in {o.option_id for o in options}:
            return None
        return picked

    def _synthetic(self, what: str, title: str, kind: ToolKind, body: str) -> str:
        """A tool call made for a question the core asks outside any tool call."""
        call_id = f"tiller-{what}-{next(self._ids)}"
        content = [tool_content(text_block(body))] if body else None
        self.outbox.send(
            start_tool_call(call_id, title, kind=kind, status="pending", content=content)
        )
        return call_id

    def _close(self, call_id: str, ok: bool) -> None:
        self.outbox.send(update_tool_call(call_id, status="completed" if ok else "failed"))

    async def confirm_tool(
        self, turn_id: str, call: ToolCall, preview: Preview, agent: AgentRef | None = None
    ) -> ToolAnswer:
        where = self.calls.roots or self.calls.workspace
        view = describe_tool(call.name, call.input, where)
        shown = preview_content(preview, where)
        self.calls.show(call.id, shown)
        tool_call = ToolCallUpdate(
            tool_call_id=call.id,
            title=view.title if agent is None else f"{view.title} ({agent.name} agent)",
            kind=view.kind,
            status="pending",
            content=shown,
            locations=list(view.locations) or None,
            raw_input=call.input,
        )
        match await self._ask(tool_call, tool_options(call, self.trusted())):
            case "allow":
                answer = ToolAnswer("allow")
            case "allowSession":
                answer = ToolAnswer("allowSession")
            case "allowAlways":
                answer = ToolAnswer("allowAlways")
            case _:
                return DENIED_BY_DEFAULT
        return answer  # confirmDecided marks the call running

    async def approve_plan(self, turn_id: str, plan: str) -> PlanAnswer:
        call_id = self.calls.open_plan_call()
        own = call_id is None
        if call_id is None:
            call_id = self._synthetic("plan", "Ready to code?", "switch_mode", plan)
        tool_call = ToolCallUpdate(
            tool_call_id=call_id,
            title="Ready to code?",
            kind="switch_mode",
            status="pending",
            content=[tool_content(text_block(plan))],
        )
        picked: str | None = None
        try:
            picked = await self._ask(tool_call, PLAN_OPTIONS)
        finally:
            if own:
                self._close(call_id, picked in ("acceptEdits", "default"))
        match picked:
            case "acceptEdits":
                return PlanAnswer(True, None, "acceptEdits")
            case "default":
                return PlanAnswer(True, None, "default")
            case _:
                return PLAN_NOT_APPROVED

    async def checkpoint(self, turn_id: str, tools_used: int, trail: Sequence[TrailItem]) -> bool:
        done = " → ".join(f"{t.name} {'✓' if t.status == 'ok' else '✗'}" for t in trail[-12:])
        title = f"Continue after {tools_used} tool calls in this turn?"
        call_id = self._synthetic("checkpoint", title, "other", done)
        tool_call = ToolCallUpdate(tool_call_id=call_id, title=title, kind="other")
        go_on = False
        try:
            go_on = (
                await self._ask(tool_call, CHECKPOINT_OPTIONS, self.checkpoint_timeout)
                == "continue"
            )
        finally:
            self._close(call_id, go_on)
        return go_on
