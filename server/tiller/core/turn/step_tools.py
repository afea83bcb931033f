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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from tiller.core.permissions.call_rules import NOT_RULED
from tiller.core.permissions.rule_files import book_of
from tiller.core.permissions.rules import Place
from tiller.core.turn.approvals import CheckpointStop, checkpoint_stop
from tiller.core.turn.call_record import CallRecord
from tiller.core.turn.edit_diagnostics import checked_edit
from tiller.core.turn.events import Notice, ToolOutput
from tiller.core.turn.live_events import CoalescedOutput
from tiller.core.turn.nested_instructions import nested_material, told_folders
from tiller.core.turn.outcomes import Completed, Stopped, TurnOutcome
from tiller.core.turn.permit import Permission
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
from tiller.core.turn.step import (
    NOT_RUN_AT_CHECKPOINT,
    NOT_RUN_STOPPED,
    NOT_RUN_WITH_PLAN,
    Running,
    Step,
)
from tiller.core.turn.tool_hooks import post_tool_use
from tiller.extend.instructions import cut_notices
from tiller.jsontypes import JSON
from tiller.model.usage import NO_USAGE, Usage
from tiller.protocol import ToolStatus, TrailItem
from tiller.tools.base import Tool, ToolContext, ToolResult
from tiller.tools.live_output import LiveOutput

AskPlan = Callable[[str], Awaitable[PlanVerdict]]


@dataclass
class ToolRunner:
    """Runs the calls of every step of one turn: each batch's checkpoint and snapshot, the
    permission step (``permit.Permission``), the runs, and their record (``CallRecord``:
    the trail, the tools used). Fresh per turn; nothing to reset."""

    host: TurnHost
    setup: TurnSetup
    ask_plan: AskPlan  # the turn's one plan gate (exit_plan_mode)
    halted: str | None = None  # a hook's ``continue: false``: the turn stops after the batch
    told: set[str] | None = None  # folders whose nested instructions the model has (lazy)
    usage: Usage = NO_USAGE  # what the subagents of this turn's task calls cost
    next_checkpoint: int = field(init=False)
    record: CallRecord = field(init=False)
    permission: Permission = field(init=False)

    def __post_init__(self) -> None:
        self.next_checkpoint = self.setup.tool_budget
        self.record = CallRecord(self.host, self.setup)
        self.permission = Permission(self.host, self.setup, self.record, self._halt)

    def _halt(self, why: str) -> None:
        self.halted = why

    @property
    def trail(self) -> list[TrailItem]:
        return self.record.trail

    def skip(self, call: ToolCall, step: Step, why: str, status: ToolStatus) -> None:
        """Answer a call that is not run (with ``why``), as started and finished at once."""
        self.record.skip(call, step, why, status)

    def answer_interrupted(self, step: Step) -> None:
        """Answer every call of an interrupted step that started and has no result yet."""
        self.record.answer_interrupted(step)

    async def execute(self, calls: list[ToolCall], step: Step) -> TurnOutcome | None:
        plan_exit = next((c for c in calls if c.name == "exit_plan_mode"), None)
        if plan_exit is not None:
            for call in calls:
                if call is not plan_exit:
                    self.skip(call, step, NOT_RUN_WITH_PLAN, "skipped")
            return await self._exit_plan(plan_exit, step)
        # Judged once per call, off the event loop (a long command line takes a while to
        # parse, and the answer depends on the files), before anything runs.
        self.permission.judged(step, await asyncio.to_thread(self.permission.judge, calls))
        done, index = 0, 0
        while done < len(calls):
            first = partition(calls[done:], lambda call: step.read_only[call.id])[0]
            batch = replace(first, index=index)
            stop = await self._checkpoint()
            if stop is not None:
                return self._stopped(stop, calls[done:], step)
            snapshot = self.setup.snapshot
            if snapshot is not None and not all(step.read_only[c.id] for c in batch.calls):
                await snapshot.before_writes()  # reads never wait for the checkpoint
            permitted = [await self.permission.permit(c, batch, step) for c in batch.calls]
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
                judged = await asyncio.to_thread(self.permission.judge, calls[done:])
                self.permission.judged(step, judged)
            if self.halted is not None:  # a hook said ``continue: false``
                for call in calls[done:]:
                    self.skip(call, step, NOT_RUN_STOPPED.format(why=self.halted), "skipped")
                return Stopped(self.halted)
        return None

    async def _checkpoint(self) -> CheckpointStop | None:
        """Ask at every ``toolBudget`` calls whether to go on: None, or the stop."""
        budget = self.setup.tool_budget
        if budget <= 0 or self.record.tools_used < self.next_checkpoint:
            return None
        answer = await self.setup.approver.checkpoint(
            self.setup.turn_id, self.record.tools_used, tuple(self.trail)
        )
        self.next_checkpoint = (self.record.tools_used // budget + 1) * budget
        return checkpoint_stop(answer)

    def _stopped(self, stop: CheckpointStop, left: list[ToolCall], step: Step) -> TurnOutcome:
        """The turn stops at a checkpoint; the calls ``left`` say why, when it is known
        (never who, when it is not: a ``stop`` answer may be a limit, not the user)."""
        not_run = NOT_RUN_AT_CHECKPOINT.format(count=self.record.tools_used)
        if stop.why:
            not_run = NOT_RUN_STOPPED.format(why=stop.why)
        for call in left:
            self.skip(call, step, not_run, "skipped")
        return Stopped(f"stopped at a checkpoint: {stop.why}" if stop.why else
                       "stopped at a checkpoint")  # fmt: skip

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
            self.permission.tell_hooks("PostToolUse", verdict, call.id)
            self.halted = self.halted or verdict.halt
        if not result.is_error:
            result = self._with_nested_instructions(call, result)
        step.running.pop(call.id, None)
        if result.usage is not None:  # a subagent's model calls: the turn's and the session's
            self.usage += result.usage
            self.host.record_usage(result.usage, None)
        ms = int((time.monotonic() - running.since) * 1000)
        return self.record.record(call, result, "error" if result.is_error else "ok", ms)

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
        self.record.start(call, step, 0, False)
        plan = call.input.get("plan")
        if not isinstance(plan, str) or not plan.strip():
            why = "exit_plan_mode needs a non-empty 'plan' (markdown)."
            self.record.finish(call, step, ToolResult(why, True), "error", 0)
            return None
        book = book_of(self.host.settings())
        denied = book.for_call(call.name, call.input, Place.of(self.setup.context.workspace))
        if denied is not None and denied.effect == "deny":  # ExitPlanMode in a deny rule
            why = f"Denied by the permission {denied.describe()}."
            self.record.finish(call, step, ToolResult(why, True), "denied", 0)
            return None
        if self.host.mode != "plan":
            self.host.emit(Notice("exit_plan_mode called outside plan mode; asking anyway"))
        match await self.ask_plan(plan):
            case Approved(mode=mode):
                self.record.finish(call, step, ToolResult(EXIT_APPROVED.format(mode=mode)), "ok", 0)
                return None
            case Revise(feedback=feedback):
                text = EXIT_REVISE.format(feedback=feedback)
                self.record.finish(call, step, ToolResult(text, True), "error", 0)
                return None
            case Declined():
                self.record.finish(call, step, ToolResult(EXIT_DECLINED, True), "error", 0)
                return Completed(None)
            case GaveUp(feedback=feedback, times=times):
                text = EXIT_GAVE_UP.format(feedback=feedback, times=times)
                self.record.finish(call, step, ToolResult(text, True), "error", 0)
                return Completed(None)
