// The Tiller JSON-RPC contract (PROTOCOL.md) as TypeScript types. Pure: no vscode import.

export type Mode = "default" | "acceptEdits" | "plan";
export const MODES: readonly Mode[] = ["default", "acceptEdits", "plan"];

export interface Thinking {
  enabled: boolean;
  /** v2: "low" | "medium" | "high" | "max" on models with adaptive thinking. */
  effort?: string | null;
  budgetTokens: number | null;
}

/** v2: tokens in the context after the last step, and the model's window. */
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
}

export interface State {
  sessionId: string;
  mode: Mode;
  model: string;
  thinking: Thinking;
  busy: boolean;
  turnId: string | null;
  queue: string[];
  activeTodo: string | null;
  todoCounts: { completed: number; total: number };
  toolsUsed: number;
  /** v2 (absent from older servers). */
  context?: ContextUse | null;
  sessionCostUsd?: number | null;
  sandbox?: "bwrap" | "none";
}

export type TodoStatus = "pending" | "in_progress" | "completed";
export interface Todo {
  content: string;
  status: TodoStatus;
  activeForm: string;
}

export type ToolStatus = "ok" | "error" | "denied" | "interrupted" | "skipped";
export interface TrailItem {
  name: string;
  status: ToolStatus;
}

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

export interface TurnError {
  kind: ErrorKind;
  message: string;
  retryable: boolean;
}

export type Outcome = "completed" | "interrupted" | "stopped" | "failed" | "refused";
export type InterruptCause = "user" | "keyword" | "server_stopped";

export interface Refusal {
  category?: string;
  explanation?: string;
}

export interface DiffStat {
  added: number;
  removed: number;
}

interface EventBase {
  sessionId: string;
  /** null for what happens outside a turn (a notice, a rewind). */
  turnId: string | null;
  seq: number;
}

export type TillerEvent = EventBase &
  (
    | { type: "turnStarted"; prompt: string }
    | { type: "textDelta"; text: string }
    | { type: "thinkingDelta"; text: string }
    | {
        type: "toolStarted";
        toolUseId: string;
        name: string;
        input: unknown;
        batch: number;
        concurrent: boolean;
      }
    | {
        type: "toolFinished";
        toolUseId: string;
        name: string;
        status: ToolStatus;
        output: string;
        durationMs: number;
        diff?: DiffStat;
      }
    | { type: "toolOutput"; toolUseId: string; text: string }
    | { type: "notice"; text: string }
    | { type: "planDecided"; approved: boolean; feedback?: string }
    | { type: "queueDropped"; prompts: string[] }
    | { type: "stepRestarted"; reason: string }
    | {
        type: "turnEnded";
        outcome: Outcome;
        final?: string;
        error?: TurnError;
        trail: TrailItem[];
        cause?: InterruptCause;
        usage?: Usage;
        refusal?: Refusal;
      }
  );

export interface PromptResult {
  status: "started" | "queued" | "handled";
  turnId?: string;
  queuePosition?: number;
  message?: string;
}

export interface ModelInfo {
  id: string;
  displayName?: string;
}

export interface SessionInfo {
  sessionId: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  turns: number;
  parentId?: string;
  /** v2: the workspace folder the session belongs to. */
  workspace?: string;
}

export interface CheckpointInfo {
  turnId: string;
  prompt: string;
  createdAt: string;
  changedFiles: number;
}

export interface RewindResult {
  changed: string[];
  added: string[];
  removed: string[];
  undoId?: string;
  userChanged?: string[];
}

type Empty = Record<string, never>;

/** Client → server requests: method → [params, result]. */
export interface ClientRequests {
  "tiller/prompt": [{ text: string }, PromptResult];
  "tiller/interrupt": [{ turnId?: string }, { interrupted: boolean; turnId?: string }];
  "tiller/cycleMode": [Empty, { mode: Mode }];
  "tiller/setMode": [{ mode: Mode }, { mode: Mode }];
  "tiller/setModel": [{ model: string }, { model: string }];
  "tiller/listModels": [Empty, { models: ModelInfo[]; current: string }];
  "tiller/setThinking": [{ enabled: boolean; effort?: string; budgetTokens?: number }, Thinking];
  "tiller/getState": [Empty, State];
  "tiller/getTodos": [Empty, { todos: Todo[] }];
  "tiller/clearQueue": [Empty, { cleared: number }];
  "tiller/session/list": [{ workspace?: string }, { sessions: SessionInfo[] }];
  "tiller/session/new": [Empty, State];
  "tiller/session/resume": [{ sessionId: string }, State];
  "tiller/session/fork": [{ sessionId?: string; turnId?: string }, State];
  "tiller/session/transcript": [
    { sessionId?: string; before?: number; limit?: number },
    { entries: unknown[]; more?: boolean },
  ];
  "tiller/checkpoints": [{ sessionId?: string }, { checkpoints: CheckpointInfo[] }];
  "tiller/rewind": [{ turnId: string; files: boolean; conversation: boolean; dryRun?: boolean }, RewindResult];
  "tiller/undoRewind": [{ undoId: string }, RewindResult];
}
export type ClientRequestMethod = keyof ClientRequests;

/** Server → client notifications: method → params. */
export interface ServerNotifications {
  "tiller/state": State;
  "tiller/todos": { todos: Todo[] };
  "tiller/event": TillerEvent;
}
export type ServerNotificationMethod = keyof ServerNotifications;

export type Preview =
  | { kind: "diff"; path: string; before: string; after: string }
  | { kind: "command"; command: string; cwd: string }
  | { kind: "text"; text: string };

export interface ApprovePlanParams {
  turnId: string;
  plan: string;
}
export interface ApprovePlanResult {
  approved: boolean;
  feedback?: string;
  mode?: "acceptEdits" | "default";
}

export interface ConfirmToolParams {
  turnId: string;
  toolUseId: string;
  name: string;
  input: unknown;
  preview: Preview;
}
export type ToolDecision = "allow" | "allowSession" | "deny";
export interface ConfirmToolResult {
  decision: ToolDecision;
  feedback?: string;
}

export interface CheckpointParams {
  turnId: string;
  toolsUsed: number;
  trail: TrailItem[];
}
export interface CheckpointResult {
  continue: boolean;
}

/** Server → client requests: method → [params, result]. */
export interface ServerRequests {
  "tiller/approvePlan": [ApprovePlanParams, ApprovePlanResult];
  "tiller/confirmTool": [ConfirmToolParams, ConfirmToolResult];
  "tiller/checkpoint": [CheckpointParams, CheckpointResult];
}
export type ServerRequestMethod = keyof ServerRequests;

export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;

/** True when an error is a JSON-RPC error with one of the given codes. */
export function hasErrorCode(error: unknown, ...codes: number[]): boolean {
  if (typeof error !== "object" || error === null || !("code" in error)) {
    return false;
  }
  const code = (error as { code: unknown }).code;
  return typeof code === "number" && codes.includes(code);
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
