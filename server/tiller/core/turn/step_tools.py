"""The tool calls of one step: judged, put to the checkpoint and to the permission policy,
run in batches, and recorded (``toolStarted``/``toolFinished``, the trail, the budget count).

``ToolRunner.execute`` reads top to bottom: an
``exit_plan_mode`` call is the plan gate alone -> judge which calls only read -> per batch:
the checkpoint, a permission per call, run the permitted ones (concurrently when they only
read) -> judge the rest again after a call that may write. Every call ends with exactly one
result in ``Step.results``; a refusal or a failure is a result, never an exception.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from tiller.core.hooks.config import HookEvent
from tiller.core.hooks.replies import NOTHING, Verdict
from tiller.core.permissions.call_rules import NOT_RULED, Ruled, judge, session_rules_for
from tiller.core.permissions.command_grants import grant_rules, grants
from tiller.core.permissions.modes import Allow, Ask, Decision, Deny, decide, judge_mcp
from tiller.core.permissions.rule_files import LOCAL_RULES, book_of, keep_rules
from tiller.core.permissions.rules import Place, Rule, RuleBook
from tiller.core.turn.edit_diagnostics import checked_edit
from tiller.core.turn.events import Notice, ToolFinished, ToolOutput, ToolStarted
from tiller.core.turn.hook_acts import hook_acts
from tiller.core.turn.live_events import CoalescedOutput
from tiller.core.turn.nested_instructions import nested_material, told_folders
from tiller.core.turn.outcomes import Completed, Stopped, TurnOutcome
from tiller.core.turn.plan_gate import (
    EXIT_APPROVED,
    EXIT_DECLINED,
    EXIT_GAVE_UP,
    EXIT_REVISE,
    Approved,
    Declined,
    GaveUp,
    PlanVerdict,
    Revise,
)
from tiller.core.turn.scheduler import Batch, ToolCall, partition, run_batch
from tiller.core.turn.setup import TurnHost, TurnSetup
from tiller.core.turn.step import NOT_RUN_STOPPED, NOT_RUN_WITH_PLAN, Running, Step
from tiller.core.turn.tool_hooks import post_tool_use, pre_tool_use, with_hook
from tiller.extend.instructions import cut_notices
from tiller.jsontypes import JSON
from tiller.model import history
from tiller.model.history import tool_result_block
from tiller.model.usage import NO_USAGE, Usage
from tiller.protocol import ToolStatus, TrailItem
from tiller.tools.base import Preview, Tool, ToolContext, ToolResult, read_only_call
from tiller.tools.live_output import LiveOutput
from tiller.tools.validation import validate_input

AskPlan = Callable[[str], Awaitable[PlanVerdict]]
UNTRUSTED_KEEP = (
    f"Allowed for this session only: the folder is not trusted, so a rule kept in "
    f"{LOCAL_RULES} would grant nothing (trust it with /trust, then keep rules)"
)


@dataclass(frozen=True)
class Judged:
    """Per call: whether it only reads, and what the rules say; the rule files' problems."""

    calls: dict[str, tuple[bool, Ruled]]
    problems: tuple[str, ...]


def _always(_text: str) -> bool:
    return True


def _segment_read_only(tool: Tool, context: ToolContext, text: str) -> bool:
    return read_only_call(tool, {"command": text}, context)


@dataclass
class ToolRunner:
    """Runs the calls of every step of one turn and keeps what they add up to: the trail,
    the tools used, the next budget checkpoint. Fresh per turn; nothing to reset."""

    host: TurnHost
    setup: TurnSetup
    ask_plan: AskPlan  # the turn's one plan gate (final-text plans go through it too)
    trail: list[TrailItem] = field(default_factory=list)
    tools_used: int = 0
    halted: str | None = None  # a hook's ``continue: false``: the turn stops after the batch
    notifying: set[asyncio.Task[Verdict]] = field(default_factory=set)  # Notification hooks
    told: set[str] | None = None  # folders whose nested instructions the model has (lazy)
    usage: Usage = NO_USAGE  # what the subagents of this turn's task calls cost
    next_checkpoint: int = field(init=False)
    reported: set[str] = field(default_factory=set)  # rule problems told in this turn

    def __post_init__(self) -> None:
        self.next_checkpoint = self.setup.tool_budget

    async def execute(self, calls: list[ToolCall], step: Step) -> TurnOutcome | None:
        plan_exit = next((c for c in calls if c.name == "exit_plan_mode"), None)
        if plan_exit is not None:
            for call in calls:
                if call is not plan_exit:
                    self.skip(call, step, NOT_RUN_WITH_PLAN, "skipped")
            return await self._exit_plan(plan_exit, step)
        # Judged once per call, off the event loop (a long command line takes a while to
        # parse, and the answer depends on the files), before anything runs.
        self._judged(step, await asyncio.to_thread(self._judge, calls))
        done, index = 0, 0
        while done < len(calls):
            first = partition(calls[done:], lambda call: step.read_only[call.id])[0]
            batch = replace(first, index=index)
            if not await self._checkpoint():
                for call in calls[done:]:
                    self.skip(call, step, NOT_RUN_STOPPED, "skipped")
                return Stopped("stopped at a checkpoint")
            snapshot = self.setup.snapshot
            if snapshot is not None and not all(step.read_only[c.id] for c in batch.calls):
                await snapshot.before_writes()  # reads never wait for the checkpoint
            permitted = [await self._permit(c, batch, step) for c in batch.calls]
            approved = [c for c in permitted if c is not None]
            run = Batch(batch.index, tuple(approved), batch.concurrent and len(approved) > 1)
            results = await run_batch(run, lambda call: self._run_call(call, step))
            for call, result in zip(approved, results, strict=True):
                step.results[call.id] = result
            done, index = done + len(batch.calls), index + 1
            if approved and not batch.concurrent and not step.read_only[batch.calls[0].id]:
                # A call that may write has run: what the later calls read may have changed
                # (a .git/config written now could make a "read-only" git run a program), so
                # they are judged again before they run.
                self._judged(step, await asyncio.to_thread(self._judge, calls[done:]))
            if self.halted is not None:  # a hook said ``continue: false``
                for call in calls[done:]:
                    self.skip(call, step, NOT_RUN_STOPPED, "skipped")
                return Stopped(self.halted)
        return None

    def _judge(self, calls: Sequence[ToolCall]) -> Judged:
        """Which calls only read, and what the permission rules say of each (in a worker
        thread; the rule files are read again each time, so an edit counts at once)."""
        context = self.setup.context
        files = book_of(self.host.settings()) if calls else RuleBook()
        book = files.with_rules(self.host.grants.rules)
        judged: dict[str, tuple[bool, Ruled]] = {}
        for call in calls:
            tool = self.setup.tools.get(call.name)
            if tool is None:
                judged[call.id] = (False, NOT_RULED)
                continue
            read_only = read_only_call(tool, call.input, context)
            # A call proved read-only as a whole is so segment by segment: only a deny or an
            # ask rule (a command's, or a path rule's) can change its fate.
            segment_read_only = _always if read_only else partial(_segment_read_only, tool,
                                                                   context)  # fmt: skip
            ruled = judge(call.name, tool.kind, call.input, book, context.workspace,
                          segment_read_only, context.roots.paths[1:])  # fmt: skip
            if ruled.unparsed is not None:
                read_only = False  # a line the splitter cannot read never runs unasked
            judged[call.id] = (read_only, ruled)
        return Judged(judged, files.problems)

    def _report(self, problems: Sequence[str]) -> None:
        """Each broken rule or file once per turn, as a notice."""
        for problem in problems:
            if problem not in self.reported:
                self.reported.add(problem)
                self.host.emit(Notice(f"Permission rules: {problem}"))

    def _judged(self, step: Step, judged: Judged) -> None:
        self._report(judged.problems)
        for call_id, (read_only, ruled) in judged.calls.items():
            step.read_only[call_id] = read_only
            step.ruled[call_id] = ruled

    async def _checkpoint(self) -> bool:
        budget = self.setup.tool_budget
        if budget <= 0 or self.tools_used < self.next_checkpoint:
            return True
        go_on = await self.setup.approver.checkpoint(
            self.setup.turn_id, self.tools_used, tuple(self.trail)
        )
        self.next_checkpoint = (self.tools_used // budget + 1) * budget
        return go_on

    async def _permit(self, call: ToolCall, batch: Batch, step: Step) -> ToolCall | None:
        """Decide whether the call runs (the call to run: a PreToolUse hook may rewrite its
        input) and start its log line with that decision (clients render it; none judges
        again); a refusal is its result."""
        tool = self.setup.tools.get(call.name)
        if tool is None:
            known = ", ".join(self.setup.tools)
            problem: str | None = f"Unknown tool {call.name!r}. Tools: {known}"
        else:
            problem = validate_input(tool, call.input)
        if tool is None or problem is not None:
            self._start(call, step, batch.index, batch.concurrent)
            self._finish(call, step, ToolResult(problem or "", True), "error", 0)
            return None
        verdict = NOTHING
        if self.setup.hooks.configured("PreToolUse", call.name):
            pre = await pre_tool_use(self.setup.hooks, self.host.mode, call, tool)
            self._tell_hooks("PreToolUse", pre.verdict, call.id, rewrote=pre.rewritten)
            if pre.problem is not None:
                self._start(call, step, batch.index, batch.concurrent)
                self._finish(call, step, ToolResult(pre.problem, True), "error", 0)
                return None
            call, verdict = pre.call, pre.verdict
            if pre.rewritten:  # the new input is judged again: read-only, and by the rules
                self._judged(step, await asyncio.to_thread(self._judge, [call]))
        ruled = step.ruled.get(call.id, NOT_RULED)
        mode, grants = self.host.mode, self.host.grants
        firm_ask = ruled.effect == "ask" or ruled.protected  # no hook or command skips it
        decision = with_hook(
            judge_mcp(call.name, mode, grants, self.setup.mcp_rules, ruled)
            if tool.kind == "mcp"
            else decide(
                mode,
                tool.kind,
                read_only=step.read_only.get(call.id, False),
                ruled=ruled,
                grants=grants,
            ),
            verdict,
            firm_ask=firm_ask,
        )
        options = self.setup.options  # a custom command's allowed-tools; a hook's ask wins
        if (
            isinstance(decision, Ask)
            and verdict.permission is None
            and not firm_ask
            and await asyncio.to_thread(self._command_grants, call, tool)
        ):
            decision = Allow(f"{options.command or 'command'} allowed-tools")
        if verdict.halt is not None:
            self.halted = verdict.halt
            decision = Deny(f"Not run: {verdict.halt}", decision.by)
        self._start(call, step, batch.index, batch.concurrent, decision)
        match decision:
            case Allow():
                return call
            case Deny(reason=reason):
                self._finish(call, step, ToolResult(reason, True), "denied", 0)
                return None
            case Ask():
                self.notify(f"Tiller needs your permission to use {call.name}")
                preview = with_segments(await tool.preview(call.input, self.setup.context), ruled)
                answer = await self.setup.approver.confirm_tool(self.setup.turn_id, call, preview)
                match answer.decision:
                    case "allow":
                        return call
                    case "allowSession":
                        self._grant_session(tool.kind, ruled, call.name)
                        return call
                    case "allowAlways":
                        self._grant_session(tool.kind, ruled, call.name)
                        if tool.kind == "bash":
                            await self._keep_rules(session_rules_for(ruled))
                        return call
                    case "deny":
                        why = "Denied by the user."
                        if answer.feedback:
                            why += f" Their feedback: {answer.feedback}"
                        self._finish(call, step, ToolResult(why, True), "denied", 0)
                        return None

    def _command_grants(self, call: ToolCall, tool: Tool) -> bool:
        """Whether the custom command's ``allowed-tools`` allow the call (command_grants)."""
        options, context = self.setup.options, self.setup.context
        rules = grant_rules(options.allowed_tools, options.command or "command")
        read_only = partial(_segment_read_only, tool, context)
        others = context.roots.paths[1:]
        return grants(rules, call.name, tool.kind, call.input, context.workspace, read_only, others)

    def notify(self, message: str) -> None:
        """Notification hooks: told, never awaited by the question they announce."""
        hooks = self.setup.hooks
        if hooks.configured("Notification"):
            fields = {"message": message, "title": "Tiller"}
            task = asyncio.create_task(hooks.run("Notification", self.host.mode, fields))
            self.notifying.add(task)
            task.add_done_callback(self.notifying.discard)

    def _tell_hooks(
        self, event: HookEvent, verdict: Verdict, tool_use_id: str, *, rewrote: bool = False
    ) -> None:
        """``hookActed`` when hooks acted on a call (its row shows a decision's hook too)."""
        for act in hook_acts(event, verdict, tool_use_id, rewrote=rewrote):
            self.host.emit(act)

    def _grant_session(self, kind: str, ruled: Ruled, name: str) -> None:
        """ "Allow for session": every edit, exactly the command's segments not yet allowed
        (never a program's prefix; a write to a rules file is asked again next time), or
        that one MCP tool."""
        grants = self.host.grants
        if kind == "edit" and not ruled.protected:
            self.host.set_grants(grants.allow_edits())
        elif kind == "bash":
            self.host.set_grants(grants.allow_rules(session_rules_for(ruled)))
        elif kind == "mcp":
            self.host.set_grants(grants.allow_mcp_tool(name))

    async def _keep_rules(self, rules: tuple[Rule, ...]) -> None:
        """ "Always allow": the segments' exact rules, kept in the local settings file (in an
        untrusted folder that file grants nothing: they stay session rules, as said)."""
        if not self.host.trust.trusted:
            self.host.emit(Notice(UNTRUSTED_KEEP))
            return
        kept, said = await asyncio.to_thread(keep_rules, self.setup.context.workspace, rules)
        grants = self.host.grants  # a rule now in the file need not be a session rule too
        self.host.set_grants(replace(grants, rules=tuple(
            r for r in grants.rules if not (r.scope == "session" and r.text in kept))))  # fmt: skip
        if kept:
            self.host.emit(Notice(f"Always allowed ({LOCAL_RULES}): {', '.join(kept)}"))
        for why in said:
            self.host.emit(Notice(why))

    async def _run_call(self, call: ToolCall, step: Step) -> JSON:
        """Run one permitted call. A command that runs without the user's yes is confined to
        the sandbox when it was judged read-only, and gets git's unasked overrides when a rule
        allowed it too (``tool_env.unasked_env``); its output streams as ``toolOutput``."""
        tool = self.setup.tools[call.name]
        stream = CoalescedOutput(lambda text: self.host.emit(ToolOutput(call.id, text)))
        running = Running(time.monotonic(), LiveOutput(stream.add))
        step.running[call.id] = running
        read_only = step.read_only.get(call.id, False)
        context = replace(
            self.setup.context,
            sandboxed=read_only,
            # allowed by a rule, not by the user's yes: git gets the unasked overrides too
            unasked=read_only or step.ruled.get(call.id, NOT_RULED).effect == "allow",
            live=running.output,
            call_id=call.id,
        )
        try:
            result = await self._run_tool(tool, call, context)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # a tool bug must not take the turn down
            result = ToolResult(f"Tool {call.name} failed: {type(err).__name__}: {err}", True)
        finally:
            stream.flush()  # an interrupted call keeps ``running`` for its partial output
        if not result.is_error and self.setup.hooks.configured("PostToolUse", call.name):
            result, verdict = await post_tool_use(self.setup.hooks, self.host.mode, call, result)
            self._tell_hooks("PostToolUse", verdict, call.id)
            self.halted = self.halted or verdict.halt
        if not result.is_error:
            result = self._with_nested_instructions(call, result)
        step.running.pop(call.id, None)
        if result.usage is not None:  # a subagent's model calls: the turn's and the session's
            self.usage += result.usage
            self.host.record_usage(result.usage, None)
        ms = int((time.monotonic() - running.since) * 1000)
        return self._record(call, result, "error" if result.is_error else "ok", ms)

    async def _run_tool(self, tool: Tool, call: ToolCall, context: ToolContext) -> ToolResult:
        """Run the tool; an edit, where the editor or a language server gives diagnostics, with
        the errors it introduced appended to its result (edit_diagnostics.py)."""
        path = call.input.get("path")
        source = self.setup.diagnostics
        if tool.kind != "edit" or source is None or not isinstance(path, str):
            return await tool.run(call.input, context)
        return await checked_edit(
            source,
            self.setup.turn_id,
            context.roots.absolute(path),  # a folder-qualified path in its own folder
            context.workspace,
            lambda: tool.run(call.input, context),
            lambda text: self.host.emit(Notice(text)),
        )

    def _with_nested_instructions(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """A nested AGENTS.md / CLAUDE.md the call reached, told once, after its result."""
        if self.told is None:
            self.told = told_folders(self.host.messages)
        nested = nested_material(self.setup.context.workspace, call.name, call.input, self.told)
        for notice in nested.refused:
            self.host.emit(Notice(notice))
        found = nested.found
        for folder, text in found:
            self.host.emit(Notice(f"Instructions for {folder}/ apply: the model is told so"))
            for cut in cut_notices(text):
                self.host.emit(Notice(cut))
        if not found:
            return result
        return replace(result, output="\n\n".join([result.output, *(t for _, t in found)]))

    # --- the plan gate of an exit_plan_mode call --------------------------------------------

    async def _exit_plan(self, call: ToolCall, step: Step) -> TurnOutcome | None:
        """The approval of an exit_plan_mode call, answered as its result. Approved or revised:
        the turn goes on; rejected without feedback, or too often: the turn ends."""
        self._start(call, step, 0, False)
        plan = call.input.get("plan")
        if not isinstance(plan, str) or not plan.strip():
            why = "exit_plan_mode needs a non-empty 'plan' (markdown)."
            self._finish(call, step, ToolResult(why, True), "error", 0)
            return None
        book = book_of(self.host.settings())
        denied = book.for_call(call.name, call.input, Place.of(self.setup.context.workspace))
        if denied is not None and denied.effect == "deny":  # ExitPlanMode in a deny rule
            why = f"Denied by the permission {denied.describe()}."
            self._finish(call, step, ToolResult(why, True), "denied", 0)
            return None
        if self.host.mode != "plan":
            self.host.emit(Notice("exit_plan_mode called outside plan mode; asking anyway"))
        match await self.ask_plan(plan):
            case Approved(mode=mode):
                self._finish(call, step, ToolResult(EXIT_APPROVED.format(mode=mode)), "ok", 0)
                return None
            case Revise(feedback=feedback):
                text = EXIT_REVISE.format(feedback=feedback)
                self._finish(call, step, ToolResult(text, True), "error", 0)
                return None
            case Declined():
                self._finish(call, step, ToolResult(EXIT_DECLINED, True), "error", 0)
                return Completed(None)
            case GaveUp(feedback=feedback, times=times):
                text = EXIT_GAVE_UP.format(feedback=feedback, times=times)
                self._finish(call, step, ToolResult(text, True), "error", 0)
                return Completed(None)

    # --- the record of each call --------------------------------------------------------------

    def answer_interrupted(self, step: Step) -> None:
        """Answer every call of an interrupted step that started and has no result yet."""
        for call in step.started.values():
            if call.id not in step.results:
                running = step.running.get(call.id)
                step.results[call.id] = self._record_interrupted(call, running)

    def _record_interrupted(self, call: ToolCall, running: Running | None) -> JSON:
        """An interrupted call's result: its real duration and the output it had produced."""
        if running is None:
            return self._record(
                call, ToolResult(history.INTERRUPTED_RESULT, True), "interrupted", 0
            )
        partial = running.output.text()
        text = history.INTERRUPTED_RESULT
        if partial.strip():
            text += f" (partial output before the interrupt):\n{partial}"
        ms = int((time.monotonic() - running.since) * 1000)
        return self._record(call, ToolResult(text, True), "interrupted", ms)

    def _record(self, call: ToolCall, result: ToolResult, status: ToolStatus, ms: int) -> JSON:
        edit = result.edit if status == "ok" else None
        if edit is not None and self.setup.edits is not None:
            self.setup.edits.keep(self.setup.session_id, call.id, edit)  # before it is shown
        line = edit.line if edit is not None else None
        self.host.emit(
            ToolFinished(call.id, call.name, status, result.output, ms, result.diff, line)
        )
        self.trail.append(TrailItem(call.name, status))
        if status in ("ok", "error"):
            self.tools_used += 1
            self.host.count_tools(self.tools_used)
        return tool_result_block(
            call.id, result.output, is_error=result.is_error, blocks=result.blocks
        )

    def _finish(
        self, call: ToolCall, step: Step, result: ToolResult, status: ToolStatus, ms: int
    ) -> None:
        step.results[call.id] = self._record(call, result, status, ms)

    def _start(
        self,
        call: ToolCall,
        step: Step,
        batch: int,
        concurrent: bool,
        decision: Decision | None = None,
    ) -> None:
        step.started[call.id] = call
        self.host.emit(ToolStarted(call.id, call.name, call.input, batch, concurrent, decision))

    def skip(self, call: ToolCall, step: Step, why: str, status: ToolStatus) -> None:
        """Answer a call that is not run (with ``why``), as started and finished at once."""
        self._start(call, step, 0, False)
        self._finish(call, step, ToolResult(why, True), status, 0)


def with_segments(preview: Preview, ruled: Ruled) -> Preview:
    """A command's preview with its split: each segment, its decision and the rule that
    made it (``preview.segments``), so the card shows what "allow for session" allows."""
    segments = ruled.segments_to_wire()
    if segments is None:
        return preview
    return replace(preview, extra={**preview.extra, "segments": segments})
