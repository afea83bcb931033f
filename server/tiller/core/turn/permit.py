"""The permission step of a tool call: whether it runs, asked once.

Before a batch runs, each call is judged off the event loop: whether it only reads, and what
the permission rules say of it (``call_rules``; the rule files are read again each time, so an
edit counts at once). ``Permission.permit`` then decides per call, in this order: an unknown
tool or an invalid input is an error; a PreToolUse hook may rewrite the input (judged again),
answer, or halt the turn; the mode and the rules decide (``modes.decide``, ``judge_mcp``), a
hook's answer on top (``with_hook``) unless a rule asks firmly; a custom command's
``allowed-tools`` may allow what would be asked; then the call's row starts with that decision,
and an ``Ask`` goes to the user, whose "allow for session" / "always allow" become grants or
kept rules. A refusal is the call's result; the call to run is returned otherwise."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from tiller.core.hooks.config import HookEvent
from tiller.core.hooks.replies import NOTHING, Verdict
from tiller.core.permissions.call_rules import NOT_RULED, Ruled, judge, session_rules_for
from tiller.core.permissions.command_grants import grant_rules, grants
from tiller.core.permissions.modes import Allow, Ask, Decision, Deny, decide, judge_mcp
from tiller.core.permissions.rule_files import LOCAL_RULES, book_of, keep_rules
from tiller.core.permissions.rules import Rule, RuleBook
from tiller.core.turn.approvals import ToolAnswer
from tiller.core.turn.call_record import CallRecord
from tiller.core.turn.events import Notice
from tiller.core.turn.hook_acts import hook_acts
from tiller.core.turn.scheduler import Batch, ToolCall
from tiller.core.turn.setup import TurnHost, TurnSetup
from tiller.core.turn.step import Step
from tiller.core.turn.tool_hooks import pre_tool_use, with_hook
from tiller.tools.base import Preview, Tool, ToolContext, ToolResult, read_only_call
from tiller.tools.validation import validate_input

NOBODY_ASKED = (
    "the client had nobody to ask for permission, so the call was not run (the user did not "
    "refuse it). Go on without it if you can, and say which call needs permission."
)
UNTRUSTED_KEEP = (
    f"Allowed for this session only: the folder is not trusted, so a rule kept in "
    f"{LOCAL_RULES} would grant nothing (trust it with /trust, then keep rules)"
)


def denial(answer: ToolAnswer) -> str:
    """A denied call's result: the user's refusal with their feedback, or what a client that
    had nobody to ask says (``asked: false``), never worded as the user's."""
    if not answer.asked:
        return f"Not run: {answer.feedback or NOBODY_ASKED}"
    feedback = f" Their feedback: {answer.feedback}" if answer.feedback else ""
    return f"Denied by the user.{feedback}"


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
class Permission:
    """The permission step of one turn's calls (fresh per turn): ``judge`` them, ``permit``
    each; hooks told through ``notify`` and ``tell_hooks``; ``halt`` stops the turn after
    the batch (a hook's ``continue: false``)."""

    host: TurnHost
    setup: TurnSetup
    record: CallRecord
    halt: Callable[[str], None]
    notifying: set[asyncio.Task[Verdict]] = field(default_factory=set)  # Notification hooks
    reported: set[str] = field(default_factory=set)  # rule problems told in this turn

    def judge(self, calls: Sequence[ToolCall]) -> Judged:
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

    def judged(self, step: Step, judged: Judged) -> None:
        self._report(judged.problems)
        for call_id, (read_only, ruled) in judged.calls.items():
            step.read_only[call_id] = read_only
            step.ruled[call_id] = ruled

    async def permit(self, call: ToolCall, batch: Batch, step: Step) -> ToolCall | None:
        """Decide whether the call runs (the call to run: a PreToolUse hook may rewrite its
        input) and start its log line with that decision (clients render it; none judges
        again); a refusal is its result."""
        match await self._checked(call, step):
            case str() as problem:
                self.record.start(call, step, batch.index, batch.concurrent)
                self.record.finish(call, step, ToolResult(problem, True), "error", 0)
                return None
            case (ToolCall() as call, tool, verdict):
                pass
        ruled = step.ruled.get(call.id, NOT_RULED)
        decision = await self._decide(call, tool, step, ruled, verdict)
        self.record.start(call, step, batch.index, batch.concurrent, decision)
        match decision:
            case Allow():
                return call
            case Deny(reason=reason):
                self.record.finish(call, step, ToolResult(reason, True), "denied", 0)
                return None
            case Ask():
                return await self._ask(call, tool, step, ruled)

    async def _checked(self, call: ToolCall, step: Step) -> str | tuple[ToolCall, Tool, Verdict]:
        """The call as it will be decided (a PreToolUse hook may rewrite its input, judged
        again then) with its tool and the hooks' verdict; or why it cannot run at all (an
        unknown tool, an input its schema refuses, a hook's broken answer)."""
        tool = self.setup.tools.get(call.name)
        if tool is None:
            return f"Unknown tool {call.name!r}. Tools: {', '.join(self.setup.tools)}"
        problem = validate_input(tool, call.input)
        if problem is not None:
            return problem
        if not self.setup.hooks.configured("PreToolUse", call.name):
            return call, tool, NOTHING
        pre = await pre_tool_use(self.setup.hooks, self.host.mode, call, tool)
        self.tell_hooks("PreToolUse", pre.verdict, call.id, rewrote=pre.rewritten)
        if pre.problem is not None:
            return pre.problem
        if pre.rewritten:  # the new input is judged again: read-only, and by the rules
            self.judged(step, await asyncio.to_thread(self.judge, [pre.call]))
        return pre.call, tool, pre.verdict

    async def _decide(
        self, call: ToolCall, tool: Tool, step: Step, ruled: Ruled, verdict: Verdict
    ) -> Decision:
        """The mode and the rules, a hook's answer on top (a firm ask stays: no hook or
        command skips it), a custom command's allowed-tools for what would be asked, and a
        hook's halt last."""
        mode, grants = self.host.mode, self.host.grants
        firm_ask = ruled.effect == "ask" or ruled.protected
        ruling = (
            judge_mcp(call.name, mode, grants, self.setup.mcp_rules, ruled)
            if tool.kind == "mcp"
            else decide(mode, tool.kind, read_only=step.read_only.get(call.id, False),
                        ruled=ruled, grants=grants)
        )  # fmt: skip
        decision = with_hook(ruling, verdict, firm_ask=firm_ask)
        if (
            isinstance(decision, Ask)
            and verdict.permission is None
            and not firm_ask
            and await asyncio.to_thread(self._command_grants, call, tool)
        ):
            decision = Allow(f"{self.setup.options.command or 'command'} allowed-tools")
        if verdict.halt is not None:
            self.halt(verdict.halt)
            decision = Deny(f"Not run: {verdict.halt}", decision.by)
        return decision

    async def _ask(self, call: ToolCall, tool: Tool, step: Step, ruled: Ruled) -> ToolCall | None:
        """The user's answer: the call to run (a session grant or kept rules with it), or the
        denial as its result."""
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
                self.record.finish(call, step, ToolResult(denial(answer), True), "denied", 0)
                return None

    def _command_grants(self, call: ToolCall, tool: Tool) -> bool:
        """Whether the custom command's ``allowed-tools`` allow the call (command_grants)."""
        options, context = self.setup.options, self.setup.context
        rules = grant_rules(options.allowed_tools, options.command or "command")
        read_only = partial(_segment_read_only, tool, context)
        others = context.roots.paths[1:]
        return grants(rules, call.name, tool.kind, call.input, context.workspace, read_only, others)

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

    def notify(self, message: str) -> None:
        """Notification hooks: told, never awaited by the question they announce."""
        hooks = self.setup.hooks
        if hooks.configured("Notification"):
            fields = {"message": message, "title": "Tiller"}
            task = asyncio.create_task(hooks.run("Notification", self.host.mode, fields))
            self.notifying.add(task)
            task.add_done_callback(self.notifying.discard)

    def tell_hooks(
        self, event: HookEvent, verdict: Verdict, tool_use_id: str, *, rewrote: bool = False
    ) -> None:
        """``hookActed`` when hooks acted on a call (its row shows a decision's hook too)."""
        for act in hook_acts(event, verdict, tool_use_id, rewrote=rewrote):
            self.host.emit(act)


def with_segments(preview: Preview, ruled: Ruled) -> Preview:
    """A command's preview with its split: each segment, its decision and the rule that
    made it (``preview.segments``), so the card shows what "allow for session" allows."""
    segments = ruled.segments_to_wire()
    if segments is None:
        return preview
    return replace(preview, extra={**preview.extra, "segments": segments})
