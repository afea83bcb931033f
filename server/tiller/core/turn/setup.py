"""What a turn runs with: the session as the loop sees it (``TurnHost``) and everything fixed
for the length of the turn (``TurnSetup``). Shared by the loop and its two halves,
``step_stream`` (the model's response) and ``step_tools`` (the calls it asks for)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from tiller.core.hooks.session_hooks import NO_SESSION_HOOKS, Hooks
from tiller.core.permissions.modes import Grants, McpRules
from tiller.core.turn import compaction
from tiller.core.turn.approvals import Approver
from tiller.core.turn.attachments import Attachment
from tiller.core.turn.checkpoints import TurnSnapshot
from tiller.core.turn.events import Event
from tiller.extend.settings_layer import Settings
from tiller.extend.trust import Trust
from tiller.jsontypes import JSON
from tiller.model import history
from tiller.model.history import Message
from tiller.model.models import ModelSpec
from tiller.model.provider import Provider
from tiller.model.server_tools import NO_SERVER_TOOLS, ServerTools
from tiller.model.usage import ContextUse, Usage
from tiller.protocol import Mode, Thinking
from tiller.tools.base import Tool, ToolContext
from tiller.workspace.diagnostics import EditorDiagnostics
from tiller.workspace.edit_history import EditHistory

SessionStartSource = Literal["startup", "resume"]


@dataclass(frozen=True)
class TurnOptions:
    """What a custom slash command sets for its own turn only."""

    model: str | None = None  # the frontmatter's ``model``
    allowed_tools: tuple[str, ...] = ()  # ``allowed-tools``: no question for these
    command: str | None = None  # the command, e.g. ``/review``, for the tool rows
    typed: str | None = None  # what the user typed (``/review a.py``): the session's title


PLAIN_TURN = TurnOptions()


@dataclass(frozen=True)
class Pending:
    """A prompt waiting in the queue, with the options of the command that made it."""

    text: str
    options: TurnOptions = PLAIN_TURN
    attached: tuple[Attachment, ...] = ()  # its mentions and images (attachments.py)


class TurnHost(Protocol):
    """The session as the loop sees it: live mode, grants, the history and an event sink."""

    @property
    def mode(self) -> Mode: ...
    def set_mode(self, mode: Mode) -> None: ...
    @property
    def grants(self) -> Grants: ...
    def set_grants(self, grants: Grants) -> None: ...
    @property
    def messages(self) -> tuple[Message, ...]: ...
    def append(self, role: history.Role, blocks: Sequence[JSON]) -> None: ...
    def emit(self, event: Event) -> None: ...
    def take_steers(self) -> tuple[str, ...]:
        """What the user sent to the running turn (``tiller/steer``) since the last step
        boundary, taken: the loop delivers it now."""
        ...

    def count_tools(self, used: int) -> None: ...
    @property
    def trust(self) -> Trust:
        """The folder's trust as it is now."""
        ...

    def settings(self) -> Settings:
        """The settings files as they are now, with the folder's trust as it is now (the user
        may trust the folder while a turn runs)."""
        ...

    def rewrite_history(self, messages: tuple[Message, ...]) -> None:
        """Replace the whole history (compaction, or a turn dropped after it failed or was
        refused) and persist it."""
        ...

    def record_usage(self, usage: Usage, context: ContextUse | None) -> None:
        """One model call's priced usage; ``context`` after a step (None for a summary)."""
        ...


@dataclass(frozen=True)
class TurnSetup:
    """Everything fixed for the length of one turn."""

    turn_id: str
    model: str
    thinking: Thinking
    max_tokens: int | None  # None: the model's max output
    system: str
    tools: Mapping[str, Tool]
    context: ToolContext
    provider: Provider
    approver: Approver
    tool_budget: int
    session_id: str = ""
    stop_hook: str | None = None  # the ``stopHook`` setting (its own stdin shape, kept)
    hooks: Hooks = NO_SESSION_HOOKS  # Claude Code's hooks, from the settings
    session_start: SessionStartSource | None = None  # this turn starts the live session
    options: TurnOptions = PLAIN_TURN  # a custom command's model and allowed tools
    user_prompt: bool = True  # the prompt is the user's (UserPromptSubmit hooks see it)
    retry_delays: tuple[float, ...] = (1.0, 2.0)  # backoff of step retries after a fault
    compact_ratio: float = compaction.COMPACT_RATIO
    server_tools: ServerTools = NO_SERVER_TOOLS  # declared per request, by the live mode
    web_fetch_by: str | None = None  # the WebFetch rules that shaped web_fetch (permission.by)
    mcp_rules: McpRules = McpRules()  # the MCP tools the user allowed (mcpAllow, mcpReadOnly)
    context_before: int | None = None  # tokens in context as the turn started (None: unknown)
    # The workspace snapshot taken as the turn starts (while the first response streams):
    # no tool that may write runs before it is done and up to date.
    snapshot: TurnSnapshot | None = None
    diagnostics: EditorDiagnostics | None = None  # the editor's, when it offers them
    edits: EditHistory | None = None  # where finished edits keep their before and after

    @property
    def spec(self) -> ModelSpec:
        """The model's window, max output and prices (catalog, refreshed from the API)."""
        return self.provider.spec(self.model)
