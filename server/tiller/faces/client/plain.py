"""The plain client's half of a session: events rendered as text and questions asked a line
at a time (``tiller run``, and ``tiller chat`` when stdout is not a terminal).

- stdout: the answer text as it streams, the tool log (``… bash ls``, ``✓ bash ls (12 ms)``,
  ``✗ bash make: exit code 2``), the plan when one is presented, and at the end of a turn that
  did not complete its outcome and trail (``read_file ✓ → edit_file ✓ → bash ✗``);
- stderr: notices (``· text``), questions, previews and errors.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from tiller import protocol as p
from tiller.faces.client.jsonrpc import Handlers
from tiller.faces.client.limits import StepCounter
from tiller.faces.client.options import UNATTENDED_FEEDBACK, ToolRules
from tiller.faces.client.questions import (
    Question,
    checkpoint_question,
    confirm_question,
    plan_question,
)
from tiller.faces.client.report import JsonLines, RunReport
from tiller.faces.client.terminal import Output, TerminalInput
from tiller.faces.common.children import INDENT, Children, asker, is_child_event
from tiller.faces.common.render import (
    RetryNotices,
    attachments_line,
    finished_line,
    hook_line,
    permission_note,
    preview_text,
    steered_line,
    tool_summary,
    trail_text,
)
from tiller.jsontypes import JSON

NO_ANSWER = "no answer (end of input)"
YES_HINT = "use --yes"


@dataclass
class Run:
    """One run of prompts: renders events, answers the server's questions, tracks the end."""

    output: Output
    yes: bool
    terminal: TerminalInput | None
    yes_hint: str = YES_HINT  # how to answer without a terminal (``tiller chat`` has no --yes)
    plan_unapproved: bool = False  # a plan was presented and no terminal could approve it
    tools: ToolRules = field(default_factory=ToolRules)  # --allowed-tools, --disallowed-tools
    steps: StepCounter | None = None  # --max-turns
    json_lines: JsonLines | None = None  # --output-format json|stream-json
    report: RunReport = field(default_factory=RunReport)
    turn_ended: dict[str, JSON] = field(default_factory=dict)
    _ended: asyncio.Event = field(default_factory=asyncio.Event)
    _calls: dict[str, tuple[str, str]] = field(default_factory=dict)
    _ask_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _retries: RetryNotices = field(default_factory=RetryNotices)
    _session_notices: set[str] = field(default_factory=set)
    _children: Children = field(default_factory=Children)

    def handlers(self) -> Handlers:
        return Handlers(
            notifications={
                p.EVENT: self.on_event,
                p.STATE: self.on_state,
                "window/showMessage": self.show_message,
            },
            requests={
                p.CONFIRM_TOOL: self.confirm_tool,
                p.APPROVE_PLAN: self.approve_plan,
                p.CHECKPOINT: self.checkpoint,
            },
        )

    # --- notifications (synchronous, so they render in the order they arrive) ----------------

    def show_message(self, params: Any) -> None:
        message = params.get("message") if isinstance(params, dict) else None
        if message:
            self.output.info(f"· {message}")

    def on_state(self, params: Any) -> None:
        if self.steps is not None:
            self.steps.on_state(params)

    def on_event(self, params: Any) -> None:
        if not isinstance(params, dict):
            return
        if self.json_lines is not None:
            self.json_lines.event(params)
        if is_child_event(params):  # a subagent's: indented, never in the answer
            self._child_event(params)
            return
        if self.steps is not None:
            self.steps.on_event(params.get("type"))
        out = self.output
        match params.get("type"):
            case "turnStarted":  # what the prompt attached, as the chat echoes it
                if attached := attachments_line(params.get("attachments")):
                    out.line(out.dim(attached))
            case "textDelta":
                out.write(str(params.get("text", "")))
            case "thinkingDelta":
                if out.out_tty:  # on a pipe, stdout carries the answer only
                    out.write(out.dim(str(params.get("text", ""))))
            case "toolStarted":
                name = str(params.get("name", "?"))
                summary = tool_summary(name, params.get("input"))
                self._calls[str(params.get("toolUseId"))] = (name, summary)
                decided = permission_note(params.get("permission"))
                out.line(
                    out.dim(f"… {name} {summary}".rstrip() + (f"  · {decided}" if decided else ""))
                )
            case "toolFinished":
                out.line(self._finished_line(params))
            case "notice":
                self._notice(params)
            case "hookActed":
                out.info(f"· {hook_line(params)}")
            case "steered":
                out.info(f"· {steered_line(params)}")
            case "planRequested":
                out.line("plan:")
                out.line(str(params.get("plan", "")).rstrip("\n"))
            case "command":  # a slash command's answer
                out.line(str(params.get("message", "")))
            case "planDecided":
                if params.get("approved"):
                    out.line("plan approved")
                else:
                    feedback = params.get("feedback")
                    out.line("plan rejected" + (f": {feedback}" if feedback else ""))
            case "turnEnded":
                self._turn_ended(params)
            case "agentStarted":
                out.end_line()
                out.line(out.dim(self._children.started(params)))
            case _:
                pass

    def _notice(self, params: JSON) -> None:
        """A notice on stderr: a retry once per kind and turn; one sent outside a turn (the
        session's start: MCP servers blocked, settings problems, trust) once per run, even
        when a turn says it again."""
        said = str(params.get("text", ""))
        if not self._retries.first(said) or said in self._session_notices:
            return
        if params.get("turnId") is None:
            self._session_notices.add(said)
        self.output.info(f"· {said}")

    def _child_event(self, params: JSON) -> None:
        out = self.output
        if params.get("type") == "toolStarted":
            out.end_line()
            out.line(out.dim(f"{INDENT}… {self._children.head(params)}"))
            return
        line = self._children.line(params)
        if line is not None:
            out.end_line()
            out.line(out.dim(line))

    def _finished_line(self, params: JSON) -> str:
        tool_id = str(params.get("toolUseId"))
        name, summary = self._calls.get(tool_id, (str(params.get("name", "?")), ""))
        return finished_line(f"{name} {summary}".rstrip(), params)

    def _turn_ended(self, params: JSON) -> None:
        out = self.output
        out.end_line()
        outcome = params.get("outcome")
        trail = trail_text(params.get("trail"))
        if outcome == "failed":
            error = params.get("error") or {}
            out.info(f"error ({error.get('kind', 'internal')}): {error.get('message', '')}")
        if outcome != "completed":
            out.line(str(outcome))
            if trail:
                out.line(trail)
        self._retries.turn_over()
        self.turn_ended[str(params.get("turnId"))] = params
        self._ended.set()

    async def wait_turn(self, turn_id: str, server_gone: asyncio.Event) -> JSON | None:
        """The turn's ``turnEnded`` event; ``None`` if the server went away first."""
        while turn_id not in self.turn_ended:
            if server_gone.is_set():
                return None
            self._ended.clear()
            ended = asyncio.create_task(self._ended.wait())
            gone = asyncio.create_task(server_gone.wait())
            try:
                await asyncio.wait({ended, gone}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ended.cancel()
                gone.cancel()
        return self.turn_ended[turn_id]

    # --- requests: the user decides -----------------------------------------------------------

    async def confirm_tool(self, params: Any) -> JSON:
        params = params if isinstance(params, dict) else {}
        name = str(params.get("name", "?"))
        summary = tool_summary(name, params.get("input"))
        ruled = self.tools.answer(name)
        if ruled is not None:
            if ruled["decision"] == "deny":
                self.output.info(f"· denied {name} {summary}".rstrip() + ": --disallowed-tools")
            return ruled
        if self.yes:
            return {"decision": "allow"}
        if self.terminal is None:  # nobody refused it: nobody could be asked
            self.output.info(
                f"· not run: {name} {summary}".rstrip()
                + f" needs permission and there is no terminal to ask on ({self.yes_hint}, "
                "or an allow rule)"
            )
            return {"decision": "deny", "asked": False, "feedback": UNATTENDED_FEEDBACK}
        preview = preview_text(asker(params), params.get("preview"), self.output.err_tty)
        no_answer = {"decision": "deny", "feedback": NO_ANSWER}
        return await self._withdrawable(
            name, self._on_terminal(confirm_question(params), no_answer, shown=preview)
        )

    async def approve_plan(self, params: Any) -> JSON:
        params = params if isinstance(params, dict) else {}  # planRequested showed the plan
        if self.yes:
            return {"approved": True, "mode": "acceptEdits"}
        if self.terminal is None:
            # Rejected without feedback: the turn ends here (with feedback, the model revises)
            # and the run exits as stopped, not as completed.
            self.plan_unapproved = True
            self.report.stopped_by = "plan"
            self.output.info(
                f"· stopped: the plan needs approval and there is no terminal to approve on "
                f"({self.yes_hint})"
            )
            return {"approved": False}
        no_answer = {"approved": False, "feedback": NO_ANSWER}
        return await self._withdrawable("plan", self._on_terminal(plan_question(params), no_answer))

    async def checkpoint(self, params: Any) -> JSON:
        params = params if isinstance(params, dict) else {}
        if self.steps is not None:
            if self.steps.exceeded:
                self.report.stopped_by = "maxTurns"
                self.output.info(
                    f"· stopped: --max-turns {self.steps.max_steps} reached (the model's next "
                    "tool calls were not run)"
                )
                return {"continue": False, "reason": f"--max-turns {self.steps.max_steps} reached"}
            if not self.steps.user_checkpoint(params.get("toolsUsed")):
                return {"continue": True}  # asked for --max-turns only
        answer = await self._user_checkpoint(params)
        if answer.get("continue") is not True:
            self.report.stopped_by = "checkpoint"
        return answer

    async def _user_checkpoint(self, params: JSON) -> JSON:
        trail = trail_text(params.get("trail"))
        self.output.line(
            f"checkpoint: {params.get('toolsUsed', '?')} tool calls so far"
            + (f": {trail}" if trail else "")
        )
        if self.yes:
            return {"continue": True}
        if self.terminal is None:
            self.output.info(
                f"· stopping: no terminal to ask whether to continue ({self.yes_hint})"
            )
            return {"continue": False}
        question = checkpoint_question(params)
        return await self._withdrawable(
            "checkpoint", self._on_terminal(question, {"continue": False})
        )

    async def _withdrawable(self, what: str, question: Awaitable[JSON]) -> JSON:
        try:
            return await question
        except asyncio.CancelledError:
            self.output.info(f"· the question ({what}) was withdrawn")
            raise

    async def _on_terminal(self, question: Question, no_answer: JSON, shown: str = "") -> JSON:
        """Ask until a line names a choice: ``no_answer`` at end of input. A choice that
        asks for feedback takes the rest of its line, or else asks for it on the next."""
        async with self._ask_lock:
            if shown:
                self.output.info(shown)
            self.output.info(question.title)
            while True:
                line = await self._ask(question.prompt_line())
                if line is None:
                    return no_answer
                picked = question.from_line(line)
                if picked is None:
                    self.output.info(f"Please answer {question.keys_text()}.")
                    continue
                if not picked.choice.asks_feedback:
                    return picked.choice.answered()
                feedback = picked.feedback or await self._ask("Feedback (empty for none):")
                return picked.choice.answered(feedback or "")

    async def _ask(self, prompt: str) -> str | None:
        assert self.terminal is not None
        self.output.info(prompt)
        self.output.err.write("> ")
        self.output.err.flush()
        return await self.terminal.readline()
