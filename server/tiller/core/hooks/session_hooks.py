"""The hooks of one session: which commands run for an event, with what on stdin (Claude
Code's documented fields), and what they said, combined (``replies.Verdict``).

Common stdin fields: ``session_id``, ``transcript_path`` (Tiller keeps transcripts in its
store, not in a file: always ""), ``cwd`` (the workspace), ``hook_event_name``,
``permission_mode``; then per event: ``tool_name``/``tool_input``/``tool_use_id``
(PreToolUse), plus ``tool_response`` (PostToolUse), ``prompt`` (UserPromptSubmit),
``stop_hook_active`` (Stop), ``trigger``/``custom_instructions`` (PreCompact), ``source``
(SessionStart), ``message``/``title`` (Notification). The hooks of one event run concurrently,
as in Claude Code; none of them blocks the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tiller.core.hooks.claude_names import claude_name, to_claude_input
from tiller.core.hooks.config import NO_HOOKS, HookConfig, HookEvent, hooks_of_settings
from tiller.core.hooks.replies import NOTHING, Verdict, combine, read_reply
from tiller.core.hooks.run import run_hook
from tiller.extend.settings_layer import Settings
from tiller.jsontypes import JSON
from tiller.protocol import Mode


@dataclass(frozen=True)
class Hooks:
    """What a turn's hooks run with (fixed for the turn)."""

    config: HookConfig = NO_HOOKS
    workspace: Path = field(default_factory=Path.cwd)
    env: Mapping[str, str] = field(default_factory=dict)
    session_id: str = ""

    def configured(self, event: HookEvent, tool: str | None = None) -> bool:
        name = claude_name(tool) if tool is not None else None
        return bool(self.config.for_event(event, name))

    async def run(
        self, event: HookEvent, mode: Mode, fields: JSON, tool: str | None = None
    ) -> Verdict:
        """Run the hooks of ``event`` (for ``tool``'s Claude Code name, on tool events)."""
        name = claude_name(tool) if tool is not None else None
        matching = self.config.for_event(event, name)
        if not matching:
            return NOTHING
        payload: JSON = {
            "session_id": self.session_id,
            "transcript_path": "",
            "cwd": str(self.workspace),
            "hook_event_name": event,
            "permission_mode": mode,
            **fields,
        }
        runs = await asyncio.gather(
            *(run_hook(hook, payload, self.workspace, self.env) for hook in matching)
        )
        return combine([read_reply(event, h, r) for h, r in zip(matching, runs, strict=True)])

    def tool_fields(self, tool: str, tool_input: JSON, tool_use_id: str) -> JSON:
        return {
            "tool_name": claude_name(tool),
            "tool_input": to_claude_input(tool, tool_input, self.workspace),
            "tool_use_id": tool_use_id,
        }


NO_SESSION_HOOKS = Hooks()


def session_hooks(
    configured: HookConfig, settings: Settings, env: Mapping[str, str], session_id: str
) -> tuple[Hooks, list[str]]:
    """The hooks of the settings files as they are now (user, workspace, local scopes; every
    file's hooks run; none when one of them says ``"disableAllHooks": true``) plus the
    ``hooks`` setting; and the problems of entries skipped. The hooks of a file inside an
    untrusted workspace are left out (``Settings.withheld`` says so)."""
    workspace = settings.workspace
    if settings.hooks_disabled:  # Claude Code's switch
        return Hooks(configured, workspace, env, session_id), []
    found, problems = hooks_of_settings(
        [(str(s.path), s.settings.hooks) for s in settings.granting()]
    )
    return Hooks(found + configured, workspace, env, session_id), problems
