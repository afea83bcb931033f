"""PreToolUse and PostToolUse hooks around one call (``core/hooks/session_hooks.py`` runs them).

Safety: a hook never gives more rights than the mode. ``allow`` only skips the user's
question; a mode's denial (plan mode's writes) stands; ``deny`` is an error result with the
hook's reason; ``ask`` puts the call to the user even where the mode would allow it. An
``updatedInput`` replaces the call's input (mapped back to Tiller's fields, validated by the
tool's schema, judged read-only again).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tiller.core.hooks.claude_names import from_claude_input
from tiller.core.hooks.replies import Verdict
from tiller.core.hooks.session_hooks import Hooks
from tiller.core.permissions.modes import Allow, Ask, Decision, Deny
from tiller.core.turn.scheduler import ToolCall
from tiller.jsontypes import JSON
from tiller.protocol import Mode
from tiller.tools.base import Tool, ToolResult
from tiller.tools.validation import validate_input

HOOK_DENIED = "Denied by a PreToolUse hook ({by}): {reason}"
HOOK_BAD_INPUT = "A PreToolUse hook ({by}) rewrote the input into one the tool refuses: {problem}"


@dataclass(frozen=True)
class PreHook:
    """The hooks' say on a call: the call to run (its input maybe rewritten), the hooks'
    verdict, and a problem that makes it an error result."""

    call: ToolCall
    verdict: Verdict
    problem: str | None = None
    rewritten: bool = False


async def pre_tool_use(hooks: Hooks, mode: Mode, call: ToolCall, tool: Tool) -> PreHook:
    """The PreToolUse hooks' say on a call; a rewritten input is validated here (the caller
    judges it again: read-only, rules)."""
    verdict = await hooks.run(
        "PreToolUse", mode, hooks.tool_fields(call.name, call.input, call.id), call.name
    )
    if verdict.updated_input is None or verdict.permission == "deny":
        return PreHook(call, verdict)
    new_input = from_claude_input(call.name, verdict.updated_input, hooks.workspace)
    by = verdict.acted[-1] if verdict.acted else "hook"
    problem = validate_input(tool, new_input)
    if problem is not None:
        return PreHook(call, verdict, HOOK_BAD_INPUT.format(by=by, problem=problem))
    return PreHook(replace(call, input=new_input), verdict, rewritten=True)


def with_hook(decision: Decision, verdict: Verdict, *, firm_ask: bool = False) -> Decision:
    """The mode's decision with the hooks' permission: never more rights than the mode.
    ``firm_ask``: an ask rule or a write to a rules file asked, which an allow never skips
    (as in Claude Code: a hook's allow does not override deny or ask rules)."""
    by = verdict.permission_by or "hook"
    match verdict.permission, decision:
        case "deny", _:
            reason = verdict.reason or "no reason given"
            return Deny(HOOK_DENIED.format(by=by, reason=reason), by)
        case _, Deny():
            return decision
        case "ask", _:
            return Ask(by)
        case "allow", Ask() if not firm_ask:
            return Allow(by)
        case _:
            return decision


def tool_response(call: ToolCall, result: ToolResult, workspace_input: JSON) -> JSON:
    """``tool_response`` as Claude Code's tools shape it, near enough for scripts that read
    ``filePath``/``stdout``; ``output`` always has Tiller's result text."""
    response: JSON = {"output": result.output, "success": not result.is_error}
    match call.name:
        case "bash":
            response |= {"stdout": result.output, "stderr": "", "interrupted": False}
        case "write_file" | "edit_file" | "read_file":
            response["filePath"] = workspace_input.get("file_path")
        case _:
            pass
    return response


async def post_tool_use(
    hooks: Hooks, mode: Mode, call: ToolCall, result: ToolResult
) -> tuple[ToolResult, Verdict]:
    """Run the PostToolUse hooks of a call that succeeded; what they feed back (a block's
    reason, ``additionalContext``) is appended to its result."""
    fields = hooks.tool_fields(call.name, call.input, call.id)
    fields["tool_response"] = tool_response(call, result, fields["tool_input"])
    verdict = await hooks.run("PostToolUse", mode, fields, call.name)
    added = [*([f"PostToolUse hook feedback: {verdict.reason}"] if verdict.blocked else [])]
    added += [f"PostToolUse hook context: {text}" for text in verdict.context]
    if not added:
        return result, verdict
    return replace(result, output="\n\n".join([result.output, *added])), verdict
