// GENERATED from server/tiller/protocol.py: do not edit. Regenerate with
//   uv run --frozen python -m tiller.protocol_ts > vscode-extension/src/protocol.ts
// The Tiller JSON-RPC contract (docs/protocol.md) as TypeScript types. Pure: no vscode import.

export { errorMessage, hasErrorCode, INVALID_PARAMS, METHOD_NOT_FOUND } from "./rpcErrors";

export type Mode = "default" | "acceptEdits" | "plan";
export const MODES: readonly Mode[] = ["default", "acceptEdits", "plan"];
export type ToolStatus = "ok" | "error" | "denied" | "interrupted" | "skipped";
export type TodoStatus = "pending" | "in_progress" | "completed";
export const TODO_STATUSES: readonly TodoStatus[] = ["pending", "in_progress", "completed"];
export type OutcomeName = "completed" | "interrupted" | "stopped" | "failed" | "refused";
export type InterruptCause = "user" | "keyword" | "server_stopped";
export type HookOutcome =
  | "allowed"
  | "denied"
  | "asked"
  | "rewroteInput"
  | "addedContext"
  | "fedBack"
  | "blockedPrompt"
  | "continued"
  | "stopped"
  | "message";
export type ToolDecision = "allow" | "allowSession" | "allowAlways" | "deny";
export type PermissionDecision = "allow" | "ask" | "deny";
export type ModelThinking = "adaptive" | "budget" | "none";
export type Sandbox = "bwrap" | "none";
export type PromptStatus = "started" | "queued" | "handled";
export type AttachmentKind =
  | "file"
  | "folder"
  | "symbol"
  | "selection"
  | "problems"
  | "terminal"
  | "diff"
  | "image";
export type DiagnosticSeverity = "error" | "warning" | "information" | "hint";
export type SteerStatus = "steered" | "started" | "queued" | "handled";
export type RuleEffect = "allow" | "ask" | "deny";
export type RuleScope = "user" | "workspace" | "local" | "session";
export type WritableRuleScope = "local" | "workspace" | "user";
export type ErrorKind =
  | "auth"
  | "rate_limit"
  | "overloaded"
  | "server"
  | "connection"
  | "timeout"
  | "context_too_long"
  | "invalid_request"
  | "output_limit"
  | "internal";
export type Effort = "low" | "medium" | "high" | "xhigh" | "max";
export const EFFORTS: readonly Effort[] = ["low", "medium", "high", "xhigh", "max"];

// Method names
export const PROMPT = "tiller/prompt";
export const INTERRUPT = "tiller/interrupt";
export const CYCLE_MODE = "tiller/cycleMode";
export const SET_MODE = "tiller/setMode";
export const SET_MODEL = "tiller/setModel";
export const LIST_MODELS = "tiller/listModels";
export const LIST_COMMANDS = "tiller/listCommands";
export const SET_THINKING = "tiller/setThinking";
export const GET_STATE = "tiller/getState";
export const GET_TODOS = "tiller/getTodos";
export const CLEAR_QUEUE = "tiller/clearQueue";
export const SESSION_LIST = "tiller/session/list";
export const SESSION_NEW = "tiller/session/new";
export const SESSION_RESUME = "tiller/session/resume";
export const SESSION_FORK = "tiller/session/fork";
export const SESSION_SLICE = "tiller/session/slice";
export const SESSION_TRANSCRIPT = "tiller/session/transcript";
export const CHECKPOINTS = "tiller/checkpoints";
export const REWIND = "tiller/rewind";
export const UNDO_REWIND = "tiller/undoRewind";
export const EDIT = "tiller/edit";
export const STEER = "tiller/steer";
export const PERMISSIONS = "tiller/permissions";
export const PERMISSIONS_ADD = "tiller/permissions/add";
export const PERMISSIONS_REMOVE = "tiller/permissions/remove";
export const MCP_LIST = "tiller/mcp/list";
export const SET_WORKSPACE_TRUST = "tiller/setWorkspaceTrust";
export const STATE = "tiller/state";
export const TODOS = "tiller/todos";
export const EVENT = "tiller/event";
export const APPROVE_PLAN = "tiller/approvePlan";
export const CONFIRM_TOOL = "tiller/confirmTool";
export const CHECKPOINT = "tiller/checkpoint";
export const DIAGNOSTICS = "tiller/diagnostics";

// What the server sends

export interface Thinking {
  enabled: boolean;
  effort?: Effort | null;
  budgetTokens: number | null;
}

/**
 * Tokens in the context (after the last step, or counted before a request when a prompt
 * may not fit), and the model's window.
 */
export interface ContextUse {
  usedTokens: number;
  windowTokens: number;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number | null;
  webSearchRequests?: number;
  webFetchRequests?: number;
}

export interface TodoCounts {
  completed: number;
  total: number;
}

/**
 * Sent as `tiller/state` whenever a field changes; `context`, `sessionCostUsd` and
 * `sandbox` are absent from v1 servers.
 */
export interface State {
  sessionId: string;
  mode: Mode;
  model: string;
  thinking: Thinking;
  busy: boolean;
  turnId: string | null;
  queue: string[];
  activeTodo: string | null;
  todoCounts: TodoCounts;
  toolsUsed: number;
  context?: ContextUse | null;
  sessionCostUsd?: number | null;
  sandbox?: Sandbox;
  workspaceTrust?: WorkspaceTrust;
}

/**
 * Whether the workspace's settings files may run programs and widen grants, and who
 * decided (`"tiller trust"`, `"Claude Code"`, `"VS Code"`, `"not trusted yet"` ...).
 */
export interface WorkspaceTrust {
  trusted: boolean;
  by: string;
}

export interface Todo {
  content: string;
  status: TodoStatus;
  activeForm: string;
}

/** `tiller/todos` and the answer to `tiller/getTodos`. */
export interface TodoBoard {
  todos: Todo[];
}

export interface TrailItem {
  name: string;
  status: ToolStatus;
}

export interface DiffStat {
  added: number;
  removed: number;
}

export interface TurnError {
  kind: ErrorKind;
  message: string;
  retryable: boolean;
}

export interface Refusal {
  category?: string;
  explanation?: string;
}

/** The server's decision on a tool call and what made it (`by`). */
export interface Permission {
  decision: PermissionDecision;
  by: string;
}

/**
 * What every `tiller/event` carries; `turnId` is null for what happens outside a turn
 * (a notice, a rewind's undo), `parentTurnId` only in a child session. The event's own fields
 * follow (events.event_fields).
 */
export interface EventEnvelope {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
}

/**
 * What a prompt's attachment is in the event log: enough to redraw its chip or thumbnail
 * (`thumbnail`: a `data:` URL, only for an image small enough to keep in the log).
 */
export interface AttachmentSummary {
  kind: AttachmentKind;
  name: string;
  mediaType?: string;
  bytes?: number;
  thumbnail?: string;
}

export interface TurnStartedEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "turnStarted";
  prompt: string;
  attachments?: AttachmentSummary[];
}

/** Text sent with `tiller/steer`, delivered to the model at a step boundary. */
export interface SteeredEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "steered";
  text: string;
}

export interface TextDeltaEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "textDelta";
  text: string;
}

export interface ThinkingDeltaEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "thinkingDelta";
  text: string;
}

export interface ToolStartedEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "toolStarted";
  toolUseId: string;
  name: string;
  input: unknown;
  batch: number;
  concurrent: boolean;
  permission?: Permission;
}

export interface ToolFinishedEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "toolFinished";
  toolUseId: string;
  name: string;
  status: ToolStatus;
  output: string;
  durationMs: number;
  diff?: DiffStat;
  line?: number;
}

export interface ToolOutputEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "toolOutput";
  toolUseId: string;
  text: string;
}

export interface NoticeEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "notice";
  text: string;
}

/** A hook did something (docs/extend.md); `hooks` names the commands. */
export interface HookActedEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "hookActed";
  event: string;
  hooks: string;
  outcome: HookOutcome;
  message: string;
  toolUseId?: string;
}

export interface PlanDecidedEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "planDecided";
  approved: boolean;
  feedback?: string;
}

export interface QueueDroppedEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "queueDropped";
  prompts: string[];
}

export interface StepRestartedEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "stepRestarted";
  reason: string;
}

/**
 * What the log keeps of a confirmation's preview: its kind, path or command, and at most
 * 2,000 characters of each text field; never a diff's before/after.
 */
export interface PreviewSummary {
  kind?: string;
  path?: string;
  command?: string;
  cwd?: string;
  text?: string;
  segments?: CommandSegment[];
}

/**
 * One simple command of a command line, as the rules judged it: `decision` `mode`
 * when no rule covers it (the mode decides); `rule`: what decided (a rule, or
 * `read-only`); `exactOnly`: why only a rule naming it exactly may match it.
 */
export interface CommandSegment {
  text: string;
  decision: "allow" | "ask" | "deny" | "mode";
  rule?: string;
  exactOnly?: string;
}

/** Posted before `tiller/confirmTool` asks. */
export interface ConfirmRequestedEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "confirmRequested";
  toolUseId: string;
  name: string;
  preview: PreviewSummary;
}

/** Posted once the question is answered (or failed closed: `deny`). */
export interface ConfirmDecidedEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "confirmDecided";
  toolUseId: string;
  decision: ToolDecision;
  feedback?: string;
}

/** Posted before `tiller/approvePlan` asks; `planDecided` follows. */
export interface PlanRequestedEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "planRequested";
  plan: string;
}

export interface CheckpointRequestedEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "checkpointRequested";
  toolsUsed: number;
}

export interface CheckpointDecidedEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "checkpointDecided";
  continue: boolean;
}

/** A slash command and the server's answer, in the session it was typed in. */
export interface CommandEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "command";
  text: string;
  message: string;
}

/**
 * What a rewind (or its undo) does to each file: `reverted` (its content brought back),
 * `deleted`, `restored` (re-created). `changed`/`added`/`removed` are the old view
 * of the same files, seen from now (`added`: deleted by the operation, `removed`:
 * re-created by it), kept for older clients; transcript entries journaled before the
 * effect fields existed have only the old ones.
 */
export interface FileEffects {
  reverted: string[];
  deleted: string[];
  restored: string[];
  changed: string[];
  added: string[];
  removed: string[];
}

/** `turnId` (envelope and field) is the turn rewound to. */
export interface RewoundEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  reverted: string[];
  deleted: string[];
  restored: string[];
  changed: string[];
  added: string[];
  removed: string[];
  type: "rewound";
  files: boolean;
  conversation: boolean;
  undoId: string;
}

/** What the undo did to files (`restored`: the files the rewind had deleted). */
export interface RewindUndoneEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  reverted: string[];
  deleted: string[];
  restored: string[];
  changed: string[];
  added: string[];
  removed: string[];
  type: "rewindUndone";
  undoId: string;
}

/**
 * A `task` call started a child session; the child's events follow with its
 * `sessionId` and this turn as their `parentTurnId`.
 */
export interface AgentStartedEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "agentStarted";
  toolUseId: string;
  agentSessionId: string;
  agent: string;
  description: string;
}

export interface TurnEndedEvent {
  sessionId: string;
  turnId: string | null;
  seq: number;
  parentTurnId?: string;
  type: "turnEnded";
  outcome: OutcomeName;
  final?: string;
  error?: TurnError;
  trail: TrailItem[];
  cause?: InterruptCause;
  usage?: Usage;
  refusal?: Refusal;
}

export type TillerEvent =
  | TurnStartedEvent
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
  | TurnEndedEvent;

export interface PromptResult {
  status: PromptStatus;
  turnId?: string;
  queuePosition?: number;
  message?: string;
}

export interface InterruptResult {
  interrupted: boolean;
  turnId?: string;
}

export interface ModeResult {
  mode: Mode;
}

export interface ModelResult {
  model: string;
}

export interface ModelInfo {
  id: string;
  displayName?: string;
  contextWindow: number;
  maxOutput: number;
  thinking: ModelThinking;
}

export interface ModelList {
  models: ModelInfo[];
  current: string;
}

/**
 * One MCP server: `state` notStarted | running | failed | blocked (a workspace server
 * the user has not enabled); `tools`: its tools' names while it runs.
 */
export interface McpServerInfo {
  name: string;
  transport: string;
  source: string;
  state: string;
  tools: string[];
  error?: string;
}

export interface McpList {
  servers: McpServerInfo[];
  problems: string[];
}

export interface CommandListItem {
  name: string;
  description: string;
  source: string;
  argumentHint?: string;
}

export interface CommandList {
  commands: CommandListItem[];
}

export interface SessionInfo {
  sessionId: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  turns: number;
  parentId?: string;
  workspace?: string;
  parentTurnId?: string;
  agent?: string;
}

export interface SessionList {
  sessions: SessionInfo[];
}

export interface Transcript {
  entries: unknown[];
  more: boolean;
}

export interface CheckpointInfo {
  turnId: string;
  prompt: string;
  createdAt: string;
  changedFiles: number;
  skipped?: string[];
}

export interface CheckpointList {
  checkpoints: CheckpointInfo[];
}

/** `tiller/rewind` (`dryRun`: what it would do) and `tiller/undoRewind`. */
export interface RewindResult {
  reverted: string[];
  deleted: string[];
  restored: string[];
  changed: string[];
  added: string[];
  removed: string[];
  undoId?: string;
  userChanged?: string[];
}

/**
 * A finished edit's file before and after (`before` null: the edit created it), each
 * kept up to 256 KB (`complete` false: one was cut); `line`: its first changed line.
 */
export interface EditResult {
  path: string;
  before: string | null;
  after: string;
  line: number;
  complete: boolean;
}

export interface ClearQueueResult {
  cleared: number;
}

/**
 * `steered`: taken for the running turn `turnId` (`steered` event on delivery);
 * with no turn running it was a prompt (`started`, `queued`, `handled`).
 */
export interface SteerResult {
  status: SteerStatus;
  turnId?: string;
  queuePosition?: number;
  message?: string;
}

export interface Rule {
  effect: PermissionDecision;
  rule: string;
  scope: RuleScope;
  source: string;
}

/**
 * Every rule in force (lowest scope first, the session's last) and the problems of the
 * files and rules that could not be read.
 */
export interface PermissionList {
  rules: Rule[];
  problems: string[];
}

export interface PermissionChange {
  rules: Rule[];
  problems: string[];
  message: string;
}

export interface DiffPreview {
  kind: "diff";
  path: string;
  before: string;
  after: string;
}

export interface CommandPreview {
  kind: "command";
  command: string;
  cwd: string;
  segments?: CommandSegment[];
}

export interface TextPreview {
  kind: "text";
  text: string;
}

export type Preview = DiffPreview | CommandPreview | TextPreview;

export interface ApprovePlanParams {
  turnId: string;
  plan: string;
}

export interface ApprovePlanResult {
  approved: boolean;
  feedback?: string;
  mode?: "acceptEdits" | "default";
}

/** The subagent a question is asked for. */
export interface AgentRef {
  sessionId: string;
  name: string;
}

export interface ConfirmToolParams {
  turnId: string;
  toolUseId: string;
  name: string;
  input: unknown;
  preview: Preview;
  agent?: AgentRef;
}

export interface ConfirmToolResult {
  decision: ToolDecision;
  feedback?: string;
  asked?: boolean;
}

export interface CheckpointParams {
  turnId: string;
  toolsUsed: number;
  trail: TrailItem[];
}

/**
 * Asked only of a client that advertised `experimental.tiller.diagnostics`: the
 * diagnostics of `paths` (absolute) now; `settle`: first wait (briefly) for the language
 * servers to catch up with a change just made.
 */
export interface DiagnosticsParams {
  turnId: string;
  paths: string[];
  settle: boolean;
}

export interface Diagnostic {
  path: string;
  line: number;
  character: number;
  severity: DiagnosticSeverity;
  message: string;
  source?: string;
}

export interface DiagnosticsResult {
  diagnostics: Diagnostic[];
}

export interface CheckpointResult {
  continue: boolean;
}

// What the client sends: every request's params

/** `{}` (or no params at all). */
export type NoParams = Record<string, never>;

/**
 * An @-mention or an image sent with a prompt; `name` is what its chip shows.
 * `file`/`folder`: `path` (workspace-relative or absolute inside it), read by the
 * server (confined, bounded) unless `text` is given; `symbol`, `selection`,
 * `problems`, `terminal`, `diff`: the `text` the client gathered (`path`,
 * `startLine`/`endLine` say where it is from); `image`: `mediaType` and base64
 * `data` (png, jpeg, gif, webp; at most 5 MB of base64), and optionally a small
 * `thumbnail` the client made (a `data:image/...` URL of at most 64 KB) for the log.
 */
export interface AttachmentParams {
  kind: AttachmentKind;
  /** A non-empty string. */
  name: string;
  text?: string | null;
  path?: string | null;
  /** An integer of at least 1 or null. */
  startLine?: number | null;
  /** An integer of at least 1 or null. */
  endLine?: number | null;
  mediaType?: string | null;
  data?: string | null;
  thumbnail?: string | null;
}

export interface PromptParams {
  /** A non-empty string. */
  text: string;
  /** Default: []. */
  attachments?: AttachmentParams[];
}

/** `turnId`: interrupt only that turn (another id changes nothing). */
export interface InterruptParams {
  turnId?: string | null;
}

export interface SetModeParams {
  mode: Mode;
}

export interface SetModelParams {
  /** A non-empty string. */
  model: string;
}

/** Fields left out keep their current values; null means the model's default. */
export interface SetThinkingParams {
  enabled: boolean;
  effort?: Effort | null;
  budgetTokens?: number | null;
}

/** `workspace`: a folder, or `"all"`; left out, the current workspace. */
export interface SessionListParams {
  /** A non-empty string or null. */
  workspace?: string | null;
}

export interface SessionResumeParams {
  sessionId: string;
}

/** History up to the end of `turnId` (default: all) of `sessionId` (default: this). */
export interface SessionForkParams {
  sessionId?: string | null;
  turnId?: string | null;
}

export interface SessionSliceParams {
  spec: string;
  sessionId?: string | null;
}

/** Entries before the entry `before` (its `seq`), at most `limit`. */
export interface SessionTranscriptParams {
  sessionId?: string | null;
  /** An integer of at least 0 or null. */
  before?: number | null;
  /** An integer from 1 to 1000. Default: 200. */
  limit?: number;
}

export interface CheckpointsParams {
  sessionId?: string | null;
}

/** At least one of `files` and `conversation`; `dryRun` lists and changes nothing. */
export interface RewindParams {
  turnId: string;
  /** Default: false. */
  files?: boolean;
  /** Default: false. */
  conversation?: boolean;
  /** Default: false. */
  dryRun?: boolean;
}

export interface UndoRewindParams {
  undoId: string;
}

/** A finished `write_file` / `edit_file` call, by its `toolUseId`. */
export interface EditParams {
  /** A non-empty string. */
  toolUseId: string;
}

/** `turnId`: steer only that turn (with another running, or none, it is a prompt). */
export interface SteerParams {
  /** A non-empty string. */
  text: string;
  turnId?: string | null;
}

export interface AddRuleParams {
  effect: PermissionDecision;
  /** A non-empty string. */
  rule: string;
  /** Default: "local". */
  scope?: WritableRuleScope;
}

export interface RemoveRuleParams {
  /** A non-empty string. */
  rule: string;
}

/**
 * The client's own decision for its workspace (VS Code's workspace trust granted): it
 * applies at once and is not recorded (the client keeps it); `by` names the decider.
 */
export interface SetWorkspaceTrustParams {
  trusted: boolean;
  /** A non-empty string. Default: "the client". */
  by?: string;
}

/** `start`: start the servers not running first (a refresh); else the states as they are. */
export interface McpListParams {
  /** Default: false. */
  start?: boolean;
}

/** Client → server requests: method → [params, result]. */
export interface ClientRequests {
  "tiller/prompt": [PromptParams, PromptResult];
  "tiller/interrupt": [InterruptParams, InterruptResult];
  "tiller/cycleMode": [NoParams, ModeResult];
  "tiller/setMode": [SetModeParams, ModeResult];
  "tiller/setModel": [SetModelParams, ModelResult];
  "tiller/listModels": [NoParams, ModelList];
  "tiller/listCommands": [NoParams, CommandList];
  "tiller/setThinking": [SetThinkingParams, Thinking];
  "tiller/getState": [NoParams, State];
  "tiller/getTodos": [NoParams, TodoBoard];
  "tiller/clearQueue": [NoParams, ClearQueueResult];
  "tiller/session/list": [SessionListParams, SessionList];
  "tiller/session/new": [NoParams, State];
  "tiller/session/resume": [SessionResumeParams, State];
  "tiller/session/fork": [SessionForkParams, State];
  "tiller/session/slice": [SessionSliceParams, State];
  "tiller/session/transcript": [SessionTranscriptParams, Transcript];
  "tiller/checkpoints": [CheckpointsParams, CheckpointList];
  "tiller/rewind": [RewindParams, RewindResult];
  "tiller/undoRewind": [UndoRewindParams, RewindResult];
  "tiller/edit": [EditParams, EditResult];
  "tiller/steer": [SteerParams, SteerResult];
  "tiller/permissions": [NoParams, PermissionList];
  "tiller/permissions/add": [AddRuleParams, PermissionChange];
  "tiller/permissions/remove": [RemoveRuleParams, PermissionChange];
  "tiller/mcp/list": [McpListParams, McpList];
  "tiller/setWorkspaceTrust": [SetWorkspaceTrustParams, WorkspaceTrust];
}
export type ClientRequestMethod = keyof ClientRequests;

/** Server → client notifications. */
export interface ServerNotifications {
  "tiller/state": State;
  "tiller/todos": TodoBoard;
  "tiller/event": TillerEvent;
}
export type ServerNotificationMethod = keyof ServerNotifications;

/** Server → client requests: method → [params, result]. */
export interface ServerRequests {
  "tiller/approvePlan": [ApprovePlanParams, ApprovePlanResult];
  "tiller/confirmTool": [ConfirmToolParams, ConfirmToolResult];
  "tiller/checkpoint": [CheckpointParams, CheckpointResult];
  "tiller/diagnostics": [DiagnosticsParams, DiagnosticsResult];
}
export type ServerRequestMethod = keyof ServerRequests;

// Names the extension has used
export type Outcome = OutcomeName;
