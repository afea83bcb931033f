"""The contract in code: method names, enumerations, every request's params and the wire
shapes of docs/protocol.md.

What a client sends is a frozen dataclass per request (``PromptParams``), made from the wire's
camelCase object by `tiller.faces.lsp.params`; what the server sends is described by a
``TypedDict`` in wire form (camelCase keys; ``NotRequired`` members may be absent).
``vscode-extension/src/protocol.ts`` is generated from this module (`tiller.protocol_ts`): a
``TypedDict`` named ``FooWire`` is ``Foo`` there.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Final, Literal, NotRequired, TypedDict, TypeVar, cast, get_args

from tiller.jsontypes import INT64_MAX as INT64_MAX  # every number on the wire lies within
from tiller.jsontypes import INT64_MIN as INT64_MIN
from tiller.jsontypes import JSON

T = TypeVar("T")

Mode = Literal["default", "acceptEdits", "plan"]
MODES: Final[tuple[Mode, ...]] = get_args(Mode)
ToolStatus = Literal["ok", "error", "denied", "interrupted", "skipped"]
TodoStatus = Literal["pending", "in_progress", "completed"]
TODO_STATUSES: Final[tuple[TodoStatus, ...]] = get_args(TodoStatus)
OutcomeName = Literal["completed", "interrupted", "stopped", "failed", "refused"]
InterruptCause = Literal["user", "keyword", "server_stopped"]
HookOutcome = Literal[
    "allowed",  # a PreToolUse hook allowed a call the mode would have asked about
    "denied",  # a PreToolUse hook denied a call (its reason is the error result)
    "asked",  # a PreToolUse hook put a call to the user
    "rewroteInput",  # a PreToolUse hook's updatedInput replaced the call's input
    "addedContext",  # text for the model (PostToolUse, UserPromptSubmit, SessionStart)
    "fedBack",  # PostToolUse exit 2 / decision block: its reason goes to the model
    "blockedPrompt",  # UserPromptSubmit: the prompt did not reach the model
    "continued",  # Stop: the model goes back to work with the hook's reason
    "stopped",  # continue: false: the turn stops
    "message",  # a systemMessage, a failure, a timeout: for the user only
]
ToolDecision = Literal["allow", "allowSession", "allowAlways", "deny"]
PermissionDecision = Literal["allow", "ask", "deny"]
ModelThinking = Literal["adaptive", "budget", "none"]
Sandbox = Literal["bwrap", "none"]
PromptStatus = Literal["started", "queued", "handled"]
AttachmentKind = Literal[
    "file", "folder", "symbol", "selection", "problems", "terminal", "diff", "image"
]  # fmt: skip
DiagnosticSeverity = Literal["error", "warning", "information", "hint"]
SteerStatus = Literal["steered", "started", "queued", "handled"]
RuleEffect = Literal["allow", "ask", "deny"]
RuleScope = Literal["user", "workspace", "local", "session"]
WritableRuleScope = Literal["local", "workspace", "user"]
ErrorKind = Literal[
    "auth",
    "rate_limit",
    "overloaded",
    "server",
    "connection",
    "timeout",
    "context_too_long",
    "invalid_request",
    "output_limit",
    "internal",
]

# Client -> server requests
PROMPT: Final = "tiller/prompt"
INTERRUPT: Final = "tiller/interrupt"
CYCLE_MODE: Final = "tiller/cycleMode"
SET_MODE: Final = "tiller/setMode"
SET_MODEL: Final = "tiller/setModel"
LIST_MODELS: Final = "tiller/listModels"
LIST_COMMANDS: Final = "tiller/listCommands"
SET_THINKING: Final = "tiller/setThinking"
GET_STATE: Final = "tiller/getState"
GET_TODOS: Final = "tiller/getTodos"
CLEAR_QUEUE: Final = "tiller/clearQueue"
SESSION_LIST: Final = "tiller/session/list"
SESSION_NEW: Final = "tiller/session/new"
SESSION_RESUME: Final = "tiller/session/resume"
SESSION_FORK: Final = "tiller/session/fork"
SESSION_SLICE: Final = "tiller/session/slice"
SESSION_TRANSCRIPT: Final = "tiller/session/transcript"
CHECKPOINTS: Final = "tiller/checkpoints"
REWIND: Final = "tiller/rewind"
UNDO_REWIND: Final = "tiller/undoRewind"
EDIT: Final = "tiller/edit"
STEER: Final = "tiller/steer"
PERMISSIONS: Final = "tiller/permissions"
PERMISSIONS_ADD: Final = "tiller/permissions/add"
PERMISSIONS_REMOVE: Final = "tiller/permissions/remove"
MCP_LIST: Final = "tiller/mcp/list"
SET_WORKSPACE_TRUST: Final = "tiller/setWorkspaceTrust"

# Server -> client notifications
STATE: Final = "tiller/state"
TODOS: Final = "tiller/todos"
EVENT: Final = "tiller/event"

# Server -> client requests
APPROVE_PLAN: Final = "tiller/approvePlan"
CONFIRM_TOOL: Final = "tiller/confirmTool"
CHECKPOINT: Final = "tiller/checkpoint"
DIAGNOSTICS: Final = "tiller/diagnostics"

MODE_WORDS: Final[dict[Mode, str]] = {
    "default": "ask before edits",
    "acceptEdits": "accept edits",
    "plan": "plan",
}
"""How a mode reads to a person (notices); the ids stay what clients send."""


def next_mode(mode: Mode) -> Mode:
    """The cycle order: default -> acceptEdits -> plan -> default."""
    return MODES[(MODES.index(mode) + 1) % len(MODES)]


Effort = Literal["low", "medium", "high", "xhigh", "max"]
EFFORTS: Final[tuple[Effort, ...]] = get_args(Effort)


def wire_name(field: str) -> str:
    """A Python field's name on the wire: ``dry_run`` -> ``dryRun``."""
    first, *rest = field.split("_")
    return first + "".join(word.capitalize() for word in rest)


@dataclass(frozen=True)
class Thinking:
    """What the user asked for; how it is said to the API depends on the model (models.py).

    ``effort`` and ``budget_tokens`` are both optional: ``None`` means the model's default.
    (``budget_tokens`` comes second so a positional ``Thinking(on, budget)`` keeps working.)
    """

    enabled: bool = False
    budget_tokens: int | None = None
    effort: Effort | None = None

    def to_wire(self) -> ThinkingWire:
        return {"enabled": self.enabled, "effort": self.effort, "budgetTokens": self.budget_tokens}

    @staticmethod
    def from_wire(data: Any) -> Thinking:
        """A stored or sent ``{enabled, effort?, budgetTokens?}`` (v1 rows had no effort)."""
        if not isinstance(data, dict):
            return Thinking()
        budget, effort = data.get("budgetTokens"), data.get("effort")
        return Thinking(
            bool(data.get("enabled")),
            budget if isinstance(budget, int) and not isinstance(budget, bool) else None,
            next((e for e in EFFORTS if e == effort), None),
        )

    def describe(self) -> str:
        """``off``, ``on``, ``on, effort high`` or ``on, budget 2048 tokens``."""
        if not self.enabled:
            return "off"
        if self.effort is not None:
            return f"on, effort {self.effort}"
        if self.budget_tokens is not None:
            return f"on, budget {self.budget_tokens} tokens"
        return "on"


@dataclass(frozen=True)
class Todo:
    content: str
    status: TodoStatus
    active_form: str

    def to_wire(self) -> TodoWire:
        return {"content": self.content, "status": self.status, "activeForm": self.active_form}


@dataclass(frozen=True)
class TrailItem:
    name: str
    status: ToolStatus

    def to_wire(self) -> TrailItemWire:
        return {"name": self.name, "status": self.status}


@dataclass(frozen=True)
class State:
    session_id: str
    mode: Mode
    model: str
    thinking: Thinking
    busy: bool
    turn_id: str | None
    queue: tuple[str, ...]
    active_todo: str | None
    todo_completed: int
    todo_total: int
    tools_used: int
    sandbox: Sandbox = "none"
    context: JSON | None = None  # ContextUseWire: after the last step, or counted before sending
    session_cost_usd: float | None = None
    trusted: bool = False  # the workspace's trust (extend/trust.py) and who decided it
    trusted_by: str = ""

    def to_wire(self) -> StateWire:
        context = cast("ContextUseWire | None", self.context)  # usage.ContextUse.to_wire()
        return {
            "sessionId": self.session_id,
            "mode": self.mode,
            "model": self.model,
            "thinking": self.thinking.to_wire(),
            "busy": self.busy,
            "turnId": self.turn_id,
            "queue": list(self.queue),
            "activeTodo": self.active_todo,
            "todoCounts": {"completed": self.todo_completed, "total": self.todo_total},
            "toolsUsed": self.tools_used,
            "sandbox": self.sandbox,
            "context": context,
            "sessionCostUsd": (
                None if self.session_cost_usd is None else round(self.session_cost_usd, 6)
            ),
            "workspaceTrust": {"trusted": self.trusted, "by": self.trusted_by},
        }


# --- What the server sends ---------------------------------------------------------------------


class ThinkingWire(TypedDict):
    enabled: bool
    effort: NotRequired[Effort | None]  # v2: absent from v1 servers
    budgetTokens: int | None


class ContextUseWire(TypedDict):
    """Tokens in the context (after the last step, or counted before a request when a prompt
    may not fit), and the model's window."""

    usedTokens: int
    windowTokens: int


class UsageWire(TypedDict):
    inputTokens: int
    outputTokens: int
    cacheReadTokens: int
    cacheWriteTokens: int
    costUsd: float | None
    webSearchRequests: NotRequired[int]  # server tools: present only when any ran
    webFetchRequests: NotRequired[int]


class TodoCounts(TypedDict):
    completed: int
    total: int


class StateWire(TypedDict):
    """Sent as ``tiller/state`` whenever a field changes; ``context``, ``sessionCostUsd`` and
    ``sandbox`` are absent from v1 servers."""

    sessionId: str
    mode: Mode
    model: str
    thinking: ThinkingWire
    busy: bool
    turnId: str | None
    queue: list[str]
    activeTodo: str | None
    todoCounts: TodoCounts
    toolsUsed: int
    context: NotRequired[ContextUseWire | None]
    sessionCostUsd: NotRequired[float | None]
    sandbox: NotRequired[Sandbox]
    workspaceTrust: NotRequired[WorkspaceTrustWire]


class WorkspaceTrustWire(TypedDict):
    """Whether the workspace's settings files may run programs and widen grants, and who
    decided (``"tiller trust"``, ``"Claude Code"``, ``"VS Code"``, ``"not trusted yet"`` ...)."""

    trusted: bool
    by: str


class TodoWire(TypedDict):
    content: str
    status: TodoStatus
    activeForm: str


class TodoBoard(TypedDict):
    """``tiller/todos`` and the answer to ``tiller/getTodos``."""

    todos: list[TodoWire]


class TrailItemWire(TypedDict):
    name: str
    status: ToolStatus


class DiffStatWire(TypedDict):
    added: int
    removed: int


class TurnError(TypedDict):
    kind: ErrorKind
    message: str
    retryable: bool


class Refusal(TypedDict, total=False):
    category: str
    explanation: str


class Permission(TypedDict):
    """The server's decision on a tool call and what made it (``by``)."""

    decision: PermissionDecision
    by: str


class EventEnvelope(TypedDict):
    """What every ``tiller/event`` carries; ``turnId`` is null for what happens outside a turn
    (a notice, a rewind's undo), ``parentTurnId`` only in a child session. The event's own fields
    follow (events.event_fields)."""

    sessionId: str
    turnId: str | None
    seq: int
    parentTurnId: NotRequired[str]


class AttachmentSummary(TypedDict):
    """What a prompt's attachment is in the event log: enough to redraw its chip or thumbnail
    (``thumbnail``: a ``data:`` URL, only for an image small enough to keep in the log)."""

    kind: AttachmentKind
    name: str
    mediaType: NotRequired[str]
    bytes: NotRequired[int]
    thumbnail: NotRequired[str]


class TurnStartedEvent(EventEnvelope):
    type: Literal["turnStarted"]
    prompt: str
    attachments: NotRequired[list[AttachmentSummary]]


class SteeredEvent(EventEnvelope):
    """Text sent with ``tiller/steer``, delivered to the model at a step boundary."""

    type: Literal["steered"]
    text: str


class TextDeltaEvent(EventEnvelope):
    type: Literal["textDelta"]
    text: str


class ThinkingDeltaEvent(EventEnvelope):
    type: Literal["thinkingDelta"]
    text: str


class ToolStartedEvent(EventEnvelope):
    type: Literal["toolStarted"]
    toolUseId: str
    name: str
    input: Any
    batch: int
    concurrent: bool
    permission: NotRequired[Permission]


class ToolFinishedEvent(EventEnvelope):
    type: Literal["toolFinished"]
    toolUseId: str
    name: str
    status: ToolStatus
    output: str
    durationMs: int
    diff: NotRequired[DiffStatWire]
    line: NotRequired[int]  # write_file / edit_file: the first line they changed (1-based)


class ToolOutputEvent(EventEnvelope):
    type: Literal["toolOutput"]
    toolUseId: str
    text: str


class NoticeEvent(EventEnvelope):
    type: Literal["notice"]
    text: str


class HookActedEvent(EventEnvelope):
    """A hook did something (docs/extend.md); ``hooks`` names the commands."""

    type: Literal["hookActed"]
    event: str  # PreToolUse, PostToolUse, UserPromptSubmit, Stop, PreCompact, SessionStart, ...
    hooks: str
    outcome: HookOutcome
    message: str
    toolUseId: NotRequired[str]


class PlanDecidedEvent(EventEnvelope):
    type: Literal["planDecided"]
    approved: bool
    feedback: NotRequired[str]


class QueueDroppedEvent(EventEnvelope):
    type: Literal["queueDropped"]
    prompts: list[str]


class StepRestartedEvent(EventEnvelope):
    type: Literal["stepRestarted"]
    reason: str


class PreviewSummary(TypedDict, total=False):
    """What the log keeps of a confirmation's preview: its kind, path or command, and at most
    2,000 characters of each text field; never a diff's before/after."""

    kind: str
    path: str
    command: str
    cwd: str
    text: str
    segments: list[CommandSegment]


class CommandSegment(TypedDict):
    """One simple command of a command line, as the rules judged it: ``decision`` ``mode``
    when no rule covers it (the mode decides); ``rule``: what decided (a rule, or
    ``read-only``); ``exactOnly``: why only a rule naming it exactly may match it."""

    text: str
    decision: Literal["allow", "ask", "deny", "mode"]
    rule: NotRequired[str]
    exactOnly: NotRequired[str]


class ConfirmRequestedEvent(EventEnvelope):
    """Posted before ``tiller/confirmTool`` asks."""

    type: Literal["confirmRequested"]
    toolUseId: str
    name: str
    preview: PreviewSummary


class ConfirmDecidedEvent(EventEnvelope):
    """Posted once the question is answered (or failed closed: ``deny``)."""

    type: Literal["confirmDecided"]
    toolUseId: str
    decision: Literal["allow", "allowSession", "allowAlways", "deny"]
    feedback: NotRequired[str]


class PlanRequestedEvent(EventEnvelope):
    """Posted before ``tiller/approvePlan`` asks; ``planDecided`` follows."""

    type: Literal["planRequested"]
    plan: str


class CheckpointRequestedEvent(EventEnvelope):
    type: Literal["checkpointRequested"]
    toolsUsed: int


# "continue" is a Python keyword: the functional form
CheckpointDecidedEvent = TypedDict(
    "CheckpointDecidedEvent",
    {
        "sessionId": str,
        "turnId": str | None,
        "seq": int,
        "parentTurnId": NotRequired[str],
        "type": Literal["checkpointDecided"],
        "continue": bool,
    },
)


class CommandEvent(EventEnvelope):
    """A slash command and the server's answer, in the session it was typed in."""

    type: Literal["command"]
    text: str
    message: str


class FileEffects(TypedDict):
    """What a rewind (or its undo) does to each file: ``reverted`` (its content brought back),
    ``deleted``, ``restored`` (re-created). ``changed``/``added``/``removed`` are the old view
    of the same files, seen from now (``added``: deleted by the operation, ``removed``:
    re-created by it), kept for older clients; transcript entries journaled before the
    effect fields existed have only the old ones."""

    reverted: list[str]
    deleted: list[str]
    restored: list[str]
    changed: list[str]
    added: list[str]
    removed: list[str]


class RewoundEvent(EventEnvelope, FileEffects):
    """``turnId`` (envelope and field) is the turn rewound to."""

    type: Literal["rewound"]
    files: bool
    conversation: bool
    undoId: str


class RewindUndoneEvent(EventEnvelope, FileEffects):
    """What the undo did to files (``restored``: the files the rewind had deleted)."""

    type: Literal["rewindUndone"]
    undoId: str


class AgentStartedEvent(EventEnvelope):
    """A ``task`` call started a child session; the child's events follow with its
    ``sessionId`` and this turn as their ``parentTurnId``."""

    type: Literal["agentStarted"]
    toolUseId: str
    agentSessionId: str
    agent: str
    description: str


class TurnEndedEvent(EventEnvelope):
    type: Literal["turnEnded"]
    outcome: OutcomeName
    final: NotRequired[str]
    error: NotRequired[TurnError]
    trail: list[TrailItemWire]
    cause: NotRequired[InterruptCause]
    usage: NotRequired[UsageWire]
    refusal: NotRequired[Refusal]


TillerEvent = (
    TurnStartedEvent
    | SteeredEvent
    | TextDeltaEvent
    | ThinkingDeltaEvent
    | ToolStartedEvent
    | ToolFinishedEvent
    | ToolOutputEvent
    | NoticeEvent
    | HookActedEvent
    | PlanDecidedEvent
    | QueueDroppedEvent
    | StepRestartedEvent
    | ConfirmRequestedEvent
    | ConfirmDecidedEvent
    | PlanRequestedEvent
    | CheckpointRequestedEvent
    | CheckpointDecidedEvent
    | CommandEvent
    | RewoundEvent
    | RewindUndoneEvent
    | AgentStartedEvent
    | TurnEndedEvent
)


# Answers to the client's requests


class PromptResult(TypedDict):
    status: PromptStatus
    turnId: NotRequired[str]
    queuePosition: NotRequired[int]
    message: NotRequired[str]


class InterruptResult(TypedDict):
    interrupted: bool
    turnId: NotRequired[str]


class ModeResult(TypedDict):
    mode: Mode


class ModelResult(TypedDict):
    model: str


class ModelInfo(TypedDict):
    id: str
    displayName: NotRequired[str]
    contextWindow: int
    maxOutput: int
    thinking: ModelThinking


class ModelList(TypedDict):
    models: list[ModelInfo]
    current: str


class McpServerInfo(TypedDict):
    """One MCP server: ``state`` notStarted | running | failed | blocked (a workspace server
    the user has not enabled); ``tools``: its tools' names while it runs."""

    name: str
    transport: str  # stdio | http | sse
    source: str  # the file (or initializationOptions, ACP session) it came from
    state: str
    tools: list[str]
    error: NotRequired[str]  # why it failed or is blocked


class McpList(TypedDict):
    servers: list[McpServerInfo]
    problems: list[str]  # configuration problems, each naming its file and server


class CommandListItem(TypedDict):
    name: str  # without the slash
    description: str
    source: str  # "built-in", or "project: <path>" / "user: <path>" for a custom command
    argumentHint: NotRequired[str]


class CommandList(TypedDict):
    commands: list[CommandListItem]


class SessionInfo(TypedDict):
    sessionId: str
    title: str
    createdAt: str
    updatedAt: str
    turns: int
    parentId: NotRequired[str]
    workspace: NotRequired[str]  # v2: absent from v1 servers
    parentTurnId: NotRequired[str]  # a subagent: the parent's turn that started it
    agent: NotRequired[str]  # a subagent: its agent kind


class SessionList(TypedDict):
    sessions: list[SessionInfo]


class Transcript(TypedDict):
    entries: list[Any]
    more: bool


class CheckpointInfo(TypedDict):
    turnId: str
    prompt: str
    createdAt: str
    changedFiles: int
    skipped: NotRequired[list[str]]


class CheckpointList(TypedDict):
    checkpoints: list[CheckpointInfo]


class RewindResult(FileEffects):
    """``tiller/rewind`` (``dryRun``: what it would do) and ``tiller/undoRewind``."""

    undoId: NotRequired[str]
    userChanged: NotRequired[list[str]]


class EditResult(TypedDict):
    """A finished edit's file before and after (``before`` null: the edit created it), each
    kept up to 256 KB (``complete`` false: one was cut); ``line``: its first changed line."""

    path: str
    before: str | None
    after: str
    line: int
    complete: bool


class ClearQueueResult(TypedDict):
    cleared: int


class SteerResult(TypedDict):
    """``steered``: taken for the running turn ``turnId`` (``steered`` event on delivery);
    with no turn running it was a prompt (``started``, ``queued``, ``handled``)."""

    status: SteerStatus
    turnId: NotRequired[str]
    queuePosition: NotRequired[int]
    message: NotRequired[str]


class RuleWire(TypedDict):
    effect: RuleEffect
    rule: str
    scope: RuleScope
    source: str


class PermissionList(TypedDict):
    """Every rule in force (lowest scope first, the session's last) and the problems of the
    files and rules that could not be read."""

    rules: list[RuleWire]
    problems: list[str]


class PermissionChange(PermissionList):
    message: str


# Server -> client requests: what the user decides


class DiffPreview(TypedDict):
    kind: Literal["diff"]
    path: str
    before: str
    after: str


class CommandPreview(TypedDict):
    kind: Literal["command"]
    command: str
    cwd: str
    segments: NotRequired[list[CommandSegment]]


class TextPreview(TypedDict):
    kind: Literal["text"]
    text: str


PreviewWire = DiffPreview | CommandPreview | TextPreview


class ApprovePlanParams(TypedDict):
    turnId: str
    plan: str


class ApprovePlanResult(TypedDict):
    approved: bool
    feedback: NotRequired[str]
    mode: NotRequired[Literal["acceptEdits", "default"]]


class AgentRefWire(TypedDict):
    """The subagent a question is asked for."""

    sessionId: str
    name: str


class ConfirmToolParams(TypedDict):
    turnId: str
    toolUseId: str
    name: str
    input: Any
    preview: PreviewWire
    agent: NotRequired[AgentRefWire]  # the call is a subagent's (turnId is the child's turn)


class ConfirmToolResult(TypedDict):
    decision: ToolDecision
    feedback: NotRequired[str]
    asked: NotRequired[bool]  # false: the client denied it without asking anyone


class CheckpointParams(TypedDict):
    turnId: str
    toolsUsed: int
    trail: list[TrailItemWire]


class DiagnosticsParams(TypedDict):
    """Asked only of a client that advertised ``experimental.tiller.diagnostics``: the
    diagnostics of ``paths`` (absolute) now; ``settle``: first wait (briefly) for the language
    servers to catch up with a change just made."""

    turnId: str
    paths: list[str]
    settle: bool


class DiagnosticWire(TypedDict):
    path: str
    line: int  # 1-based
    character: int  # 1-based
    severity: DiagnosticSeverity
    message: str
    source: NotRequired[str]


class DiagnosticsResult(TypedDict):
    diagnostics: list[DiagnosticWire]


CheckpointResult = TypedDict("CheckpointResult", {"continue": bool})


# --- What the client sends: params -------------------------------------------------------------
# Fields are snake_case here and camelCase on the wire; a field with a default may be left out,
# ``X | None`` takes null for "left out". Members the server does not know are ignored.


@dataclass(frozen=True)
class Between:
    """Marks an integer param: it must lie within ``low`` … ``high``."""

    low: int
    high: int


@dataclass(frozen=True)
class NonBlank:
    """Marks a string param: it must have more than whitespace."""


class Unset(Enum):
    """A param left out, where that differs from null: the current value stays."""

    UNSET = "unset"


UNSET: Final = Unset.UNSET


def kept(value: T | Unset, current: T) -> T:
    """``value``, or ``current`` when it was left out."""
    return current if isinstance(value, Unset) else value


@dataclass(frozen=True)
class NoParams:
    """``{}`` (or no params at all)."""


@dataclass(frozen=True)
class AttachmentParams:
    """An @-mention or an image sent with a prompt; ``name`` is what its chip shows.
    ``file``/``folder``: ``path`` (workspace-relative or absolute inside it), read by the
    server (confined, bounded) unless ``text`` is given; ``symbol``, ``selection``,
    ``problems``, ``terminal``, ``diff``: the ``text`` the client gathered (``path``,
    ``startLine``/``endLine`` say where it is from); ``image``: ``mediaType`` and base64
    ``data`` (png, jpeg, gif, webp; at most 5 MB of base64), and optionally a small
    ``thumbnail`` the client made (a ``data:image/...`` URL of at most 64 KB) for the log."""

    kind: AttachmentKind
    name: Annotated[str, NonBlank()]
    text: str | None = None
    path: str | None = None
    start_line: Annotated[int, Between(1, INT64_MAX)] | None = None
    end_line: Annotated[int, Between(1, INT64_MAX)] | None = None
    media_type: str | None = None
    data: str | None = None
    thumbnail: str | None = None


@dataclass(frozen=True)
class PromptParams:
    text: Annotated[str, NonBlank()]
    attachments: tuple[AttachmentParams, ...] = ()


@dataclass(frozen=True)
class InterruptParams:
    """``turnId``: interrupt only that turn (another id changes nothing)."""

    turn_id: str | None = None


@dataclass(frozen=True)
class SetModeParams:
    mode: Mode


@dataclass(frozen=True)
class SetModelParams:
    model: Annotated[str, NonBlank()]


@dataclass(frozen=True)
class SetThinkingParams:
    """Fields left out keep their current values; null means the model's default."""

    enabled: bool
    effort: Effort | Unset | None = UNSET
    budget_tokens: int | Unset | None = UNSET


@dataclass(frozen=True)
class SessionListParams:
    """``workspace``: a folder, or ``"all"``; left out, the current workspace."""

    workspace: Annotated[str, NonBlank()] | None = None


@dataclass(frozen=True)
class SessionResumeParams:
    session_id: str


@dataclass(frozen=True)
class SessionForkParams:
    """History up to the end of ``turnId`` (default: all) of ``sessionId`` (default: this)."""

    session_id: str | None = None
    turn_id: str | None = None


@dataclass(frozen=True)
class SessionSliceParams:
    spec: str
    session_id: str | None = None


@dataclass(frozen=True)
class SessionTranscriptParams:
    """Entries before the entry ``before`` (its ``seq``), at most ``limit``."""

    session_id: str | None = None
    before: Annotated[int, Between(0, INT64_MAX)] | None = None
    limit: Annotated[int, Between(1, 1000)] = 200


@dataclass(frozen=True)
class CheckpointsParams:
    session_id: str | None = None


@dataclass(frozen=True)
class RewindParams:
    """At least one of ``files`` and ``conversation``; ``dryRun`` lists and changes nothing."""

    turn_id: str
    files: bool = False
    conversation: bool = False
    dry_run: bool = False


@dataclass(frozen=True)
class UndoRewindParams:
    undo_id: str


@dataclass(frozen=True)
class EditParams:
    """A finished ``write_file`` / ``edit_file`` call, by its ``toolUseId``."""

    tool_use_id: Annotated[str, NonBlank()]


@dataclass(frozen=True)
class SteerParams:
    """``turnId``: steer only that turn (with another running, or none, it is a prompt)."""

    text: Annotated[str, NonBlank()]
    turn_id: str | None = None


@dataclass(frozen=True)
class AddRuleParams:
    effect: RuleEffect
    rule: Annotated[str, NonBlank()]
    scope: WritableRuleScope = "local"


@dataclass(frozen=True)
class RemoveRuleParams:
    rule: Annotated[str, NonBlank()]


@dataclass(frozen=True)
class SetWorkspaceTrustParams:
    """The client's own decision for its workspace (VS Code's workspace trust granted): it
    applies at once and is not recorded (the client keeps it); ``by`` names the decider."""

    trusted: bool
    by: Annotated[str, NonBlank()] = "the client"


@dataclass(frozen=True)
class McpListParams:
    """``start``: start the servers not running first (a refresh); else the states as they are."""

    start: bool = False


# --- Methods: what each one takes and answers ----------------------------------------------------

CLIENT_REQUESTS: Final[dict[str, tuple[type, object]]] = {
    PROMPT: (PromptParams, PromptResult),
    INTERRUPT: (InterruptParams, InterruptResult),
    CYCLE_MODE: (NoParams, ModeResult),
    SET_MODE: (SetModeParams, ModeResult),
    SET_MODEL: (SetModelParams, ModelResult),
    LIST_MODELS: (NoParams, ModelList),
    LIST_COMMANDS: (NoParams, CommandList),
    SET_THINKING: (SetThinkingParams, ThinkingWire),
    GET_STATE: (NoParams, StateWire),
    GET_TODOS: (NoParams, TodoBoard),
    CLEAR_QUEUE: (NoParams, ClearQueueResult),
    SESSION_LIST: (SessionListParams, SessionList),
    SESSION_NEW: (NoParams, StateWire),
    SESSION_RESUME: (SessionResumeParams, StateWire),
    SESSION_FORK: (SessionForkParams, StateWire),
    SESSION_SLICE: (SessionSliceParams, StateWire),
    SESSION_TRANSCRIPT: (SessionTranscriptParams, Transcript),
    CHECKPOINTS: (CheckpointsParams, CheckpointList),
    REWIND: (RewindParams, RewindResult),
    UNDO_REWIND: (UndoRewindParams, RewindResult),
    EDIT: (EditParams, EditResult),
    STEER: (SteerParams, SteerResult),
    PERMISSIONS: (NoParams, PermissionList),
    PERMISSIONS_ADD: (AddRuleParams, PermissionChange),
    PERMISSIONS_REMOVE: (RemoveRuleParams, PermissionChange),
    MCP_LIST: (McpListParams, McpList),
    SET_WORKSPACE_TRUST: (SetWorkspaceTrustParams, WorkspaceTrustWire),
}
"""Client -> server requests: method -> (params, result)."""

SERVER_NOTIFICATIONS: Final[dict[str, object]] = {
    STATE: StateWire,
    TODOS: TodoBoard,
    EVENT: TillerEvent,
}
"""Server -> client notifications: method -> params."""

SERVER_REQUESTS: Final[dict[str, tuple[object, object]]] = {
    APPROVE_PLAN: (ApprovePlanParams, ApprovePlanResult),
    CONFIRM_TOOL: (ConfirmToolParams, ConfirmToolResult),
    CHECKPOINT: (CheckpointParams, CheckpointResult),
    DIAGNOSTICS: (DiagnosticsParams, DiagnosticsResult),
}
"""Server -> client requests: method -> (params, result)."""

CUSTOM_METHODS: Final = frozenset({*CLIENT_REQUESTS, *SERVER_NOTIFICATIONS, *SERVER_REQUESTS})
"""Every method of the Tiller protocol (none of LSP's)."""
