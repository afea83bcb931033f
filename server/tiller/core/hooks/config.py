"""Hooks as configured, in Claude Code's shape (settings files' ``hooks`` and the
``initializationOptions.hooks`` setting)::

    {"PreToolUse": [{"matcher": "Bash|Edit",
                     "hooks": [{"type": "command", "command": "...", "timeout": 60}]}]}

A matcher applies to tool events (PreToolUse, PostToolUse) and is matched against the tool's
Claude Code name (``core/hooks/claude_names.py``): empty, missing or ``*`` matches every tool, a
plain name matches that name exactly, anything else is a regular expression matched whole
(``Edit|Write``, ``mcp__.*``). Other events ignore it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from tiller.jsontypes import JSON

HookEvent = Literal[
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "Stop",
    "PreCompact",
    "SessionStart",
    "Notification",
]
HOOK_EVENTS: tuple[HookEvent, ...] = get_args(HookEvent)
TOOL_EVENTS: frozenset[HookEvent] = frozenset({"PreToolUse", "PostToolUse"})
DEFAULT_TIMEOUT_SECONDS = 60.0
MAX_TIMEOUT_SECONDS = 3600.0


@dataclass(frozen=True)
class HookCommand:
    """One command to run for an event: what the user wrote and where it came from."""

    event: HookEvent
    matcher: str  # "" matches every tool
    command: str
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    source: str = "settings"

    def matches(self, tool_name: str | None) -> bool:
        if self.event not in TOOL_EVENTS or self.matcher in ("", "*"):
            return True
        if tool_name is None:
            return False
        if re.fullmatch(r"[A-Za-z0-9_]+", self.matcher):
            return tool_name == self.matcher
        try:
            return re.fullmatch(self.matcher, tool_name) is not None
        except re.error:
            return False


@dataclass(frozen=True)
class HookConfig:
    """Every configured hook, in the order they were read (lowest settings scope first)."""

    hooks: tuple[HookCommand, ...] = ()

    def for_event(self, event: HookEvent, tool_name: str | None = None) -> list[HookCommand]:
        """The hooks to run, once each (the same command listed twice runs once, as in
        Claude Code)."""
        seen: set[str] = set()
        found = []
        for hook in self.hooks:
            if hook.event == event and hook.matches(tool_name) and hook.command not in seen:
                seen.add(hook.command)
                found.append(hook)
        return found

    def __add__(self, other: HookConfig) -> HookConfig:
        return HookConfig(self.hooks + other.hooks)


NO_HOOKS = HookConfig()


def parse_hooks(value: object, source: str) -> tuple[HookConfig, list[str]]:
    """The hooks of one ``hooks`` object, and a problem per entry that was skipped (named by
    ``source`` and its place), so one bad entry never hides the others."""
    if value is None:
        return NO_HOOKS, []
    if not isinstance(value, dict):
        return NO_HOOKS, [f"{source}: 'hooks' must be an object of events"]
    found: list[HookCommand] = []
    problems: list[str] = []
    for event, groups in value.items():
        where = f"{source}: hooks.{event}"
        if event not in HOOK_EVENTS:
            problems.append(f"{where}: unknown event (known: {', '.join(HOOK_EVENTS)})")
            continue
        if not isinstance(groups, list):
            problems.append(f"{where}: expected a list of {{matcher, hooks}}")
            continue
        for n, group in enumerate(groups):
            found.extend(_group(event, group, f"{where}[{n}]", source, problems))
    return HookConfig(tuple(found)), problems


def _group(
    event: HookEvent, group: object, where: str, source: str, problems: list[str]
) -> Iterable[HookCommand]:
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        problems.append(f"{where}: expected {{matcher?, hooks: [...]}}")
        return
    matcher = group.get("matcher", "")
    if not isinstance(matcher, str):
        problems.append(f"{where}.matcher: expected a string")
        return
    if matcher not in ("", "*") and not re.fullmatch(r"[A-Za-z0-9_]+", matcher):
        try:
            re.compile(matcher)
        except re.error as err:
            problems.append(f"{where}.matcher: not a regular expression ({err})")
            return
    for n, hook in enumerate(group["hooks"]):
        parsed = _command(event, matcher, hook, f"{where}.hooks[{n}]", source)
        if isinstance(parsed, str):
            problems.append(parsed)
        else:
            yield parsed


def _command(
    event: HookEvent, matcher: str, hook: object, where: str, source: str
) -> HookCommand | str:
    if not isinstance(hook, dict):
        return f"{where}: expected {{type: 'command', command, timeout?}}"
    if hook.get("type", "command") != "command":
        return f"{where}: only type 'command' is supported, got {hook.get('type')!r}"
    command = hook.get("command")
    if not isinstance(command, str) or not command.strip():
        return f"{where}.command: expected a non-empty string"
    timeout = hook.get("timeout", DEFAULT_TIMEOUT_SECONDS)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout <= MAX_TIMEOUT_SECONDS
    ):
        return f"{where}.timeout: expected seconds, more than 0 and at most {MAX_TIMEOUT_SECONDS:g}"
    return HookCommand(event, matcher, command, float(timeout), source)


def hooks_of_settings(files: Sequence[tuple[str, JSON | None]]) -> tuple[HookConfig, list[str]]:
    """The hooks of settings files (``(source, hooks)``, lowest precedence first): every file's
    hooks run, as in Claude Code (hooks add up across scopes, they do not override)."""
    config, problems = NO_HOOKS, list[str]()
    for source, hooks in files:
        found, wrong = parse_hooks(hooks, source)
        config, problems = config + found, [*problems, *wrong]
    return config, problems
