"""Tiller's events (the ``tiller/event`` dicts) as ACP ``session/update`` payloads.

Pure mapping, no I/O: ``ToolCalls`` remembers what each started call looked like so that its
later updates (output, end) keep the diff and the locations. ``stop_reason`` turns a
``turnEnded`` event into the prompt's answer. ``SessionUpdates`` is the face's one renderer;
``replay`` feeds it a stored transcript, for ``session/load``.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from acp.helpers import (
    image_block,
    plan_entry,
    resource_link_block,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message,
    update_user_message_text,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    ContentToolCallContent,
    CurrentModeUpdate,
    FileEditToolCallContent,
    StopReason,
    TerminalToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolKind,
    UserMessageChunk,
)

from tiller.core.session.transcript import as_events
from tiller.faces.common.children import Children, is_child_event
from tiller.faces.common.render import hook_line
from tiller.jsontypes import JSON
from tiller.protocol import Todo
from tiller.workspace.roots import WorkspaceRoots

Update = (
    AgentMessageChunk
    | AgentThoughtChunk
    | UserMessageChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
)
ToolContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent

# Tiller tool name -> ACP tool kind (icons and grouping in the editor).
TOOL_KINDS: Final[dict[str, ToolKind]] = {
    "read_file": "read",
    "list_files": "search",
    "grep": "search",
    "write_file": "edit",
    "edit_file": "edit",
    "bash": "execute",
    "todo_write": "think",
    "enter_plan_mode": "switch_mode",
    "exit_plan_mode": "switch_mode",
    "task": "think",
}

LIVE_OUTPUT_CAP = 16_000  # characters of live command output kept in a tool call's content


def tool_status(tiller_status: str) -> ToolCallStatus:
    """``toolFinished.status`` -> ACP: only ``ok`` completed; denied/skipped/... failed."""
    return "completed" if tiller_status == "ok" else "failed"


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


@dataclass(frozen=True)
class ToolView:
    """How one tool call shows in the editor: what ``tool_call`` carried."""

    title: str
    kind: ToolKind
    locations: tuple[ToolCallLocation, ...] = ()
    content: tuple[ToolContent, ...] = ()


def located(raw: str, where: Path | WorkspaceRoots) -> Path:
    """The absolute path a tool's ``path`` names (see ``workspace/roots.py``)."""
    if isinstance(where, WorkspaceRoots):
        return where.absolute(raw)
    return Path(os.path.normpath(where / raw))


def _one_line(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _inline_code(text: str) -> str:
    """``text`` as Markdown inline code, fenced by more backticks than it holds in a row."""
    ticks = "`"
    while ticks in text:
        ticks += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def describe_tool(name: str, tool_input: JSON, workspace: Path | WorkspaceRoots) -> ToolView:
    """Title, kind, locations (absolute paths: a folder-qualified path in its folder) and
    initial content (diffs, commands).

    A title says what matters first and puts no ``:`` of its own in it: CodeCompanion shows
    only what comes before a colon (``explore agent: Find the note`` read ``explore agent``),
    and a title that starts with inline code, only that code."""
    kind = TOOL_KINDS.get(name, "other")
    raw_path = _str(tool_input.get("path"))
    path = str(located(raw_path, workspace)) if raw_path else ""
    where = (ToolCallLocation(path=path),) if path else ()
    match name:
        case "read_file":
            offset = tool_input.get("offset")
            line = offset if isinstance(offset, int) and not isinstance(offset, bool) else None
            at_line = (ToolCallLocation(path=path, line=line),) if path else ()
            suffix = f" (from line {line})" if line else ""
            return ToolView(f"Read {raw_path}{suffix}", kind, at_line)
        case "write_file":
            diff = tool_diff_content(path, _str(tool_input.get("content")))
            return ToolView(f"Write {raw_path}", kind, where, (diff,) if path else ())
        case "edit_file":
            old, new = _str(tool_input.get("old_string")), _str(tool_input.get("new_string"))
            diff = tool_diff_content(path, new, old)
            return ToolView(f"Edit {raw_path}", kind, where, (diff,) if path else ())
        case "bash":  # the command alone, as code: what clients that shorten titles keep
            command = _str(tool_input.get("command"))
            shown = (tool_content(text_block(_fence(command, "sh"))),)
            return ToolView(_inline_code(_one_line(command, 80)), kind, (), shown)
        case "grep":
            pattern = _str(tool_input.get("pattern"))
            scope = f" in {raw_path}" if raw_path else ""
            return ToolView(f"Search {shlex.quote(pattern)}{scope}", kind, where)
        case "list_files":
            pattern = _str(tool_input.get("pattern"))
            return ToolView(f"List {raw_path or '.'} {pattern}".rstrip(), kind, where)
        case "todo_write":
            return ToolView("Update the todo list", kind)
        case "enter_plan_mode":
            return ToolView("Enter plan mode", kind)
        case "exit_plan_mode":
            plan = _str(tool_input.get("plan"))
            body = (tool_content(text_block(plan)),) if plan else ()
            return ToolView("Ready to code?", kind, (), body)
        case "task":
            agent = _str(tool_input.get("subagent_type")) or "general-purpose"
            description = _one_line(_str(tool_input.get("description")), 80)
            return ToolView(
                f"{description} ({agent} agent)" if description else f"{agent} agent", kind
            )
        case "tool_search":
            query = _one_line(_str(tool_input.get("query")), 80)
            return ToolView(f"Search the MCP tools for {query}", "search")
        case _ if name.startswith("mcp__"):
            server, _, tool = name.removeprefix("mcp__").partition("__")
            args = json.dumps(tool_input, ensure_ascii=False, indent=2)
            body = (tool_content(text_block(_fence(args, "json"))),)
            return ToolView(f"{tool} (MCP server {server})", kind, (), body)
        case _:
            return ToolView(name, kind)


def _titled(title: str, permission: object) -> str:
    """A call's title with the rule that decided it (a mode or a read-only proof is said in
    ``_meta`` only: every read would repeat it)."""
    if isinstance(permission, dict):
        by = permission.get("by")
        if isinstance(by, str) and by.startswith(("rule", "protected")):
            return f"{title} · {by}"
    return title


@dataclass
class ToolCalls:
    """The tool calls of one session as the editor sees them (fed with events in order).

    A call the loop allowed (``toolStarted.permission``) goes ``in_progress`` at once; one it
    asks about stays ``pending`` until the approval says yes. The loop decides; this renders.
    """

    workspace: Path
    views: dict[str, ToolView] = field(default_factory=dict)
    roots: WorkspaceRoots | None = None  # the session's, when it has several
    live: dict[str, str] = field(default_factory=dict)
    open_plans: list[str] = field(default_factory=list)  # exit_plan_mode calls not yet ended

    def started(self, fields: JSON) -> list[Update]:
        call_id, name = _str(fields.get("toolUseId")), _str(fields.get("name"))
        tool_input = fields.get("input")
        tool_input = tool_input if isinstance(tool_input, dict) else {}
        view = describe_tool(name, tool_input, self.roots or self.workspace)
        self.views[call_id] = view
        if name == "exit_plan_mode":
            self.open_plans.append(call_id)
        permission = fields.get("permission")
        start = start_tool_call(
            call_id,
            _titled(view.title, permission),
            kind=view.kind,
            status="pending",
            content=view.content or None,
            locations=view.locations or None,
            raw_input=tool_input,
        )
        if isinstance(permission, dict):  # what decided, for clients that read _meta
            start = start.model_copy(update={"field_meta": {"tiller": {"permission": permission}}})
        allowed = isinstance(permission, dict) and permission.get("decision") == "allow"
        if name != "exit_plan_mode" and allowed:
            return [start, self.running(call_id)]
        return [start]

    def open_plan_call(self) -> str | None:
        """The ``exit_plan_mode`` call waiting for its approval, if any."""
        return self.open_plans[-1] if self.open_plans else None

    def show(self, call_id: str, content: Sequence[ToolContent]) -> None:
        """What the permission question showed (a full diff) stays the call's content."""
        view = self.views.get(call_id)
        if view is not None:
            self.views[call_id] = replace(view, content=tuple(content))

    def running(self, call_id: str) -> ToolCallProgress:
        return update_tool_call(call_id, status="in_progress")

    def output(self, fields: JSON) -> list[Update]:
        """Live command output (``toolOutput``): the content shows the output so far."""
        call_id = _str(fields.get("toolUseId"))
        so_far = (self.live.get(call_id, "") + _str(fields.get("text")))[-LIVE_OUTPUT_CAP:]
        self.live[call_id] = so_far
        view = self.views.get(call_id, ToolView("", "other"))
        shown = tool_content(text_block(_fence(so_far)))
        return [update_tool_call(call_id, content=[*view.content, shown])]

    def finished(self, fields: JSON) -> list[Update]:
        call_id, status = _str(fields.get("toolUseId")), _str(fields.get("status"))
        output = _str(fields.get("output"))
        view = self.views.pop(call_id, None) or ToolView(_str(fields.get("name")), "other")
        self.live.pop(call_id, None)
        if call_id in self.open_plans:
            self.open_plans.remove(call_id)
        content: list[ToolContent] = list(view.content)
        if view.kind == "execute":
            content = [tool_content(text_block(_fence(output)))] if output else []
        elif output and (view.kind != "edit" or status != "ok"):
            content.append(tool_content(text_block(output)))
        raw_output: JSON = {"status": status, "output": output}
        if isinstance(fields.get("diff"), dict):
            raw_output["diff"] = fields["diff"]
        return [
            update_tool_call(
                call_id, status=tool_status(status), content=content, raw_output=raw_output
            )
        ]


@dataclass
class ChildProgress:
    """Subagents as the content of the ``task`` call that started each: one line per call of
    the child (running, then how it ended) and its end, shown live with
    ``tool_call_update``; the call's final content adds the child's report."""

    calls: ToolCalls
    parents: dict[str, str] = field(default_factory=dict)  # child session -> task call id
    lines: dict[str, dict[str, str]] = field(default_factory=dict)  # task call -> key -> line
    text: Children = field(default_factory=Children)

    def started(self, fields: JSON) -> None:
        """The parent's ``agentStarted``: the child's events go to this call from now on."""
        call_id = _str(fields.get("toolUseId"))
        self.parents[_str(fields.get("agentSessionId"))] = call_id
        self.lines[call_id] = {}
        self.text.started(fields)

    def update(self, fields: JSON) -> list[Update]:
        call_id = self.parents.get(_str(fields.get("sessionId")))
        if call_id is None:
            return []
        kind = _str(fields.get("type"))
        key = _str(fields.get("toolUseId")) or f"{kind}-{fields.get('seq')}"
        line = f"… {self.text.head(fields)}" if kind == "toolStarted" else self.text.line(fields)
        if line is None:
            return []
        lines = self.lines.setdefault(call_id, {})
        lines[key] = line.strip()
        content = [tool_content(text_block("\n".join(lines.values())))]
        self.calls.show(call_id, content)  # kept when the task call ends, above its report
        return [update_tool_call(call_id, content=content)]


def plan_update(todos: Sequence[Todo], running: bool = True) -> AgentPlanUpdate:
    """The todo board as the ACP agent plan (all entries, every time: the client replaces).
    While no turn runs (``running`` false), an item a stopped turn left in progress is shown
    pending: nobody works on it."""
    return update_plan(
        plan_entry(t.active_form, status=t.status)
        if t.status == "in_progress" and running
        else plan_entry(t.content, status="pending" if t.status == "in_progress" else t.status)
        for t in todos
    )


@dataclass
class SessionUpdates:
    """The one renderer of the ACP face: events, in order, as ``session/update`` payloads.

    Live (``replaying`` false) the client drew some things itself: its prompt, and the answer
    to it (``turnEnded`` becomes the prompt's answer, see :func:`turn_end`). A ``session/load``
    replays the stored log through the same renderer with ``replaying`` true, which draws
    those too.
    """

    calls: ToolCalls
    replaying: bool = False
    children: ChildProgress = field(init=False)

    def __post_init__(self) -> None:
        self.children = ChildProgress(self.calls)

    def updates(self, fields: JSON) -> list[Update]:
        if is_child_event(fields):
            return self.children.update(fields)
        match fields.get("type"):
            case "agentStarted":
                self.children.started(fields)
                return []
            case "turnStarted" if self.replaying:
                prompt = update_user_message_text(_str(fields.get("prompt")))
                return [*attachment_chunks(fields.get("attachments"), self.calls.workspace), prompt]
            case "textDelta":
                return [update_agent_message_text(_str(fields.get("text")))]
            case "thinkingDelta":
                return [update_agent_thought_text(_str(fields.get("text")))]
            case "toolStarted":
                return self.calls.started(fields)
            case "confirmDecided" if fields.get("decision") in (
                "allow",
                "allowSession",
                "allowAlways",
            ):
                return [self.calls.running(_str(fields.get("toolUseId")))]
            case "toolOutput":
                return self.calls.output(fields)
            case "toolFinished":
                return self.calls.finished(fields)
            case "hookActed":  # the editor has no notices: a line in the answer
                return [update_agent_message_text(f"\n\n*{hook_line(fields)}*\n\n")]
            case "stepRestarted":
                return [update_agent_message_text("\n\n*(retrying this step)*\n\n")]
            case "steered":
                steer = f"\n\n*(steered: {_str(fields.get('text'))})*\n\n"
                return [update_agent_message_text(steer)]
            case "command":
                message = _str(fields.get("message"))
                if is_custom_command(fields):  # a line of its own above the turn's answer
                    message = f"*{message}*\n\n"
                said: list[Update] = [update_agent_message_text(message)]
                if self.replaying:
                    return [update_user_message_text(_str(fields.get("text"))), *said]
                return said
            case "turnEnded" if self.replaying and fields.get("outcome") == "failed":
                error = fields.get("error")
                message = _str(error.get("message")) if isinstance(error, dict) else ""
                return [update_agent_message_text(f"\n\n*Turn failed: {message}*\n\n")]
            case _:
                return []


@dataclass(frozen=True)
class TurnEnd:
    """What the prompt answers: a stop reason, or an error the client should show."""

    stop_reason: StopReason | None
    error: JSON | None = None


STOP_REASONS: Final[dict[str, StopReason]] = {
    "completed": "end_turn",
    "interrupted": "cancelled",
    "stopped": "max_turn_requests",
    "refused": "refusal",
}


def turn_end(fields: JSON) -> TurnEnd:
    """``turnEnded`` -> the ``session/prompt`` answer.

    completed -> end_turn; interrupted -> cancelled; stopped at a checkpoint ->
    max_turn_requests; refused -> refusal; failed with ``output_limit`` -> max_tokens; any
    other failure -> an error response carrying Tiller's ``error`` (kind, message, retryable).
    """
    outcome = _str(fields.get("outcome"))
    if outcome in STOP_REASONS:
        return TurnEnd(STOP_REASONS[outcome])
    error = fields.get("error")
    error = error if isinstance(error, dict) else {"kind": "internal", "message": outcome}
    if error.get("kind") == "output_limit":
        return TurnEnd("max_tokens")
    return TurnEnd(None, error)


def is_custom_command(fields: JSON) -> bool:
    """Whether a ``command`` event is a custom command's: its message names the command and
    its file (``/greet (project: …/greet.md)``), and a turn with its expanded text follows."""
    name = _str(fields.get("text")).strip().partition(" ")[0].lower()
    message = _str(fields.get("message")).lower()
    return bool(name) and message.startswith((f"{name} (project: ", f"{name} (user: "))


def as_typed(events: Iterable[JSON]) -> Iterator[JSON]:
    """The events with each prompt as the user typed it: the turn a custom command started
    is drawn by its ``command`` event (``/greet World``), so its ``turnStarted`` (the expanded
    text, which the user never typed) is left out."""
    expanded = False
    for event in events:
        kind = event.get("type")
        if kind in ("command", "turnStarted") and not is_child_event(event):
            started_by_command = kind == "turnStarted" and expanded
            expanded = kind == "command" and is_custom_command(event)
            if started_by_command:
                continue
        yield event


def replay(entries: Iterable[JSON], workspace: Path, left_out: str = "") -> list[Update]:
    """A stored transcript (``store.transcript`` entries, oldest first) as updates: the log
    replayed through the live renderer, after a line saying what was ``left_out`` before it."""
    view = SessionUpdates(ToolCalls(workspace), replaying=True)
    said = [update_agent_message_text(f"*{left_out}*\n\n")] if left_out else []
    return [*said, *(u for event in as_typed(as_events(entries)) for u in view.updates(event))]


def attachment_chunks(attached: Any, workspace: Path) -> list[Update]:
    """A redrawn prompt's attachments, as the editor sent such things: a file or folder as a
    resource link, an image whose thumbnail the log kept as an image, the rest as ``@name``."""
    chunks: list[Update] = []
    for item in attached if isinstance(attached, list) else []:
        if not isinstance(item, dict):
            continue
        name, kind, thumbnail = _str(item.get("name")), item.get("kind"), item.get("thumbnail")
        if kind in ("file", "folder"):
            uri = (workspace / name).as_uri()
            chunks.append(update_user_message(resource_link_block(name, uri)))
        elif kind == "image" and isinstance(thumbnail, str) and ";base64," in thumbnail:
            head, data = thumbnail.split(";base64,", 1)
            chunks.append(update_user_message(image_block(data, head.removeprefix("data:"))))
        else:
            chunks.append(update_user_message_text(f"@{name} "))
    return chunks
