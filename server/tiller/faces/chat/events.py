"""The server's notifications in the shell: lines printed above the prompt, and what stays
under them while it lasts (the answer's open line, the running tools, the queue, the status
line from ``tiller/state``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from tiller import protocol as p
from tiller.faces.chat.printer import Printer, markdown_ansi
from tiller.faces.chat.view import (
    confirm_decided_line,
    outcome_lines,
    plan_decided_line,
    queue_lines,
    rewind_line,
    todo_summary,
    toolbar_text,
    usage_text,
)
from tiller.faces.client.jsonrpc import NotificationHandler
from tiller.faces.common.children import INDENT, Children, is_child_event
from tiller.faces.common.render import (
    BOLD,
    DIM,
    GREEN,
    RED,
    RetryNotices,
    attachments_line,
    finished_line,
    hook_line,
    permission_note,
    steered_line,
    terminal_safe,
    tool_output,
    tool_summary,
)
from tiller.jsontypes import JSON

YELLOW = "\x1b[33m"
OUTPUT_TAIL_LINES = 6
Fragment = tuple[str, str]  # (style class, text)


@dataclass(frozen=True)
class RunningTool:
    head: str
    started: float
    output: tuple[str, ...] = ()
    decided: str = ""  # what allowed, asked or denied it (permission_note)

    def with_output(self, text: str) -> RunningTool:
        lines = (*self.output, *text.splitlines())
        return replace(self, output=lines[-OUTPUT_TAIL_LINES:])


class EventLog:
    """Renders what the server says; ``invalidate`` redraws the bottom area."""

    def __init__(
        self,
        printer: Printer,
        invalidate: Callable[[], None],
        columns: Callable[[], int] = lambda: 80,
    ) -> None:
        self.printer = printer
        self.invalidate = invalidate
        self.columns = columns
        self.state: JSON | None = None
        self.partial = ""
        self.partial_thinking = False
        self.running: dict[str, RunningTool] = {}
        self.show_output = False
        self.last_board: str | None = None
        self.frame = 0  # of the spinner
        self.retries = RetryNotices()
        self.children = Children()  # subagents: indented under the task call

    def notifications(self) -> dict[str, NotificationHandler]:
        return {
            p.STATE: self.on_state,
            p.TODOS: self.on_todos,
            p.EVENT: self.on_event,
            "window/showMessage": self.on_message,
        }

    def on_message(self, params: Any) -> None:
        if isinstance(params, dict) and params.get("message"):
            self.printer.print(f"· {params['message']}", DIM)

    def on_state(self, params: Any) -> None:
        if isinstance(params, dict):
            self.state = params
            self.invalidate()

    def on_todos(self, params: Any) -> None:
        running = bool((self.state or {}).get("busy"))
        board = todo_summary(params.get("todos") if isinstance(params, dict) else None, running)
        if board is not None and board != self.last_board:
            self.printer.print(f"{board}", DIM)
        self.last_board = board

    def on_event(self, params: Any) -> None:
        if not isinstance(params, dict):
            return
        if is_child_event(params):
            self._child_event(params)
            self.invalidate()
            return
        match params.get("type"):
            case "turnStarted":
                self._turn_started(params)
            case "textDelta":
                self._stream(str(params.get("text", "")), thinking=False)
            case "thinkingDelta":
                self._stream(str(params.get("text", "")), thinking=True)
            case "toolStarted":
                self._tool_started(params)
            case "toolOutput":
                self._tool_output(params)
            case "toolFinished":
                self._tool_finished(params)
            case "notice":
                said = str(params.get("text", ""))
                if self.retries.first(said):
                    self.end_partial()
                    self.printer.print(f"· {said}", DIM)
            case "hookActed":
                self.end_partial()
                self.printer.print(f"· {hook_line(params)}", DIM)
            case "planDecided":
                self.end_partial()
                self.printer.print(plan_decided_line(params))
            case "confirmRequested" | "confirmDecided" | "planRequested":
                self._question_event(params)
            case "checkpointRequested" | "checkpointDecided" | "command":
                self._question_event(params)
            case "rewound" | "rewindUndone":
                self.end_partial()
                self.printer.print(rewind_line(params), DIM)
            case "steered":
                self.end_partial()
                self.printer.print(steered_line(params), BOLD)
            case "stepRestarted":
                self.partial = ""
                self.printer.print(f"↻ step restarted: {params.get('reason', '')}", DIM)
            case "turnEnded":
                self._turn_ended(params)
            case "agentStarted":
                self.end_partial()
                self.printer.print(self.children.started(params), DIM)
            case _:
                pass
        self.invalidate()

    def _turn_started(self, params: JSON) -> None:
        self.retries.turn_over()
        self.end_partial()
        self.printer.print(f"› {params.get('prompt', '')}", BOLD)
        if shown := attachments_line(params.get("attachments")):
            self.printer.print(f"  {shown}", DIM)

    def _tool_started(self, params: JSON) -> None:
        """A running tool stays under the log, with its time, until it finishes."""
        self.end_partial()
        name = str(params.get("name", "?"))
        head = f"{name} {tool_summary(name, params.get('input'))}".rstrip()
        decided = permission_note(params.get("permission"))
        tool = RunningTool(head, time.monotonic(), decided=decided)
        self.running[str(params.get("toolUseId"))] = tool

    def _tool_output(self, params: JSON) -> None:
        tool_id = str(params.get("toolUseId"))
        if tool_id in self.running:
            tool = self.running[tool_id]
            self.running[tool_id] = tool.with_output(str(params.get("text", "")))

    def _child_event(self, params: JSON) -> None:
        """A subagent's event: its running call stays live (indented, with its time); the
        rest prints indented lines; its text stays in its own transcript."""
        tool_id = str(params.get("toolUseId"))
        match params.get("type"):
            case "toolStarted":
                head = f"{INDENT}{self.children.head(params)}"
                self.running[tool_id] = RunningTool(head, time.monotonic())
            case "toolOutput" if tool_id in self.running:
                self.running[tool_id] = self.running[tool_id].with_output(
                    str(params.get("text", ""))
                )
            case _:
                if params.get("type") == "toolFinished":
                    self.running.pop(tool_id, None)
                line = self.children.line(params)
                if line is not None:
                    self.end_partial()
                    self.printer.print(line, DIM)

    def _stream(self, text: str, thinking: bool) -> None:
        if thinking is not self.partial_thinking:
            self.end_partial()
            self.partial_thinking = thinking
        *done, self.partial = (self.partial + text).split("\n")
        for line in done:
            self.printer.print(line, DIM if thinking else "")

    def end_partial(self) -> None:
        """Print the answer's open line (before anything else is printed under it)."""
        if self.partial:
            self.printer.print(self.partial, DIM if self.partial_thinking else "")
        self.partial = ""

    def _question_event(self, params: JSON) -> None:
        """A question the server asked and its answer (the question itself is asked at the
        bottom of the screen: this is what stays in the log); a slash command and its answer."""
        self.end_partial()
        match params.get("type"):
            case "confirmRequested":
                name = str(params.get("name", "?"))
                head = f"{name} {tool_summary(name, params.get('preview'))}".rstrip()
                self.printer.print(f"? {head}: asks for approval", YELLOW)
            case "confirmDecided":
                self.printer.print(confirm_decided_line(params), DIM)
            case "planRequested":
                self.printer.print("plan:", BOLD)
                plan = terminal_safe(str(params.get("plan", "")))
                self.printer.line(markdown_ansi(plan, self.columns()))
            case "checkpointRequested":
                used = params.get("toolsUsed")
                self.printer.print(f"checkpoint: {used} tool calls so far", YELLOW)
            case "checkpointDecided":
                self.printer.print("→ continue" if params.get("continue") else "→ stop", DIM)
            case _:  # command
                self.printer.print(f"› {params.get('text', '')}", BOLD)
                self.printer.print(str(params.get("message", "")))

    def _tool_finished(self, params: JSON) -> None:
        self.end_partial()
        tool = self.running.pop(str(params.get("toolUseId")), None)
        name = str(params.get("name", "?"))
        head = tool.head if tool is not None else name
        line = finished_line(head, params, with_stats=True)
        mark = GREEN if params.get("status") == "ok" else RED
        decided = f"  · {tool.decided}" if tool is not None and tool.decided else ""
        self.printer.print_parts((mark, line[:1]), ("", line[1:]), (DIM, decided))
        output = tool_output(params).rstrip("\n")
        if self.show_output and output:
            for out_line in output.splitlines()[-20:]:
                self.printer.print(f"  {out_line}", DIM)

    def _turn_ended(self, params: JSON) -> None:
        self.end_partial()
        self.running.clear()
        for line in outcome_lines(params):
            self.printer.print(f"{line}", YELLOW)
        usage = usage_text(params.get("usage"))
        if usage:
            self.printer.print(f"{usage}", DIM)
        self.printer.print("")

    def server_died(self, code: int | None) -> None:
        """What was running ended with the server; the state says so until a new one speaks."""
        self.end_partial()
        for tool in self.running.values():
            self.printer.print(f"✗ {tool.head}: the server stopped", RED)
        self.running.clear()
        if self.state is not None:
            self.state = {**self.state, "busy": False, "turnId": None, "queue": []}
        self.printer.print(f"the server exited unexpectedly (exit code {code})", RED)

    def toggle_output(self) -> None:
        self.show_output = not self.show_output
        self.printer.print(f"· command output {'shown' if self.show_output else 'hidden'}", DIM)

    def tick(self) -> bool:
        """One spinner frame on while something runs: whether there is anything to redraw."""
        if self.running or (self.state or {}).get("busy"):
            self.frame += 1
            return True
        return False

    # --- what stays on screen ----------------------------------------------------------------

    def live_lines(self) -> list[Fragment]:
        """The answer's open line, the running tools (with their output's tail), the queue."""
        lines: list[Fragment] = []
        if self.partial:
            lines.append(("class:thinking" if self.partial_thinking else "", self.partial))
        now = time.monotonic()
        for tool in self.running.values():
            lines.append(("class:running", f"… {tool.head}  {int(now - tool.started)}s"))
            if self.show_output:
                lines.extend(("class:output", f"  {line}") for line in tool.output)
        queue = (self.state or {}).get("queue")
        if isinstance(queue, list) and queue:
            lines.extend(("class:queued", line) for line in queue_lines(queue))
            lines.append(("class:hint", "  (/queue clear drops them)"))
        return lines

    def status_line(self) -> str:
        return toolbar_text(self.state, self.frame)
