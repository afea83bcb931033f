// The chat as a value: reducers that turn tiller/event, tiller/state and approval requests into
// a list of items the webview renders. Pure: no vscode import, so it is unit-tested. `applyEvent`
// is the one renderer of the server's events; a transcript is the session's event log, and a
// redraw replays it through `applyEvent`, so a redrawn chat is the chat that was shown live.
import type {
  AttachmentSummary,
  ApprovePlanResult,
  CheckpointResult,
  ConfirmToolParams,
  ConfirmToolResult,
  DiffStat,
  ErrorKind,
  HookOutcome,
  InterruptCause,
  Mode,
  Outcome,
  Refusal,
  State,
  Thinking,
  TillerEvent,
  ToolDecision,
  ToolStatus,
  TrailItem,
  TurnError,
  Usage,
} from "../protocol";
import { type AgentView, applyChildEvent, outcomeOf, settled, startedAgent } from "./agents";

/** Commands a chat item may offer as a button (the provider runs only these). */
export type ChatCommand =
  | "tiller.setApiKey"
  | "tiller.showLogs"
  | "tiller.newSession"
  | "tiller.openSettings"
  | "tiller.resumeSession"
  | "tiller.restartServer"
  /** VS Code's Workspace Trust editor. */
  | "workbench.trust.manage";

export interface Hint {
  text: string;
  command?: { id: ChatCommand; label: string };
}

export type PlanDecision =
  | { state: "pending" }
  | { state: "approved" }
  | { state: "rejected"; feedback?: string }
  | { state: "cancelled" };

export type ConfirmDecision =
  | { state: "pending" }
  | { state: ToolDecision; feedback?: string }
  | { state: "cancelled" };

export type CheckpointDecision = { state: "pending" | "continue" | "stop" | "cancelled" };

/** What a confirmation shows of its preview (the transcript keeps no more than this). */
export type PreviewSummary =
  | { kind: "diff"; path: string }
  | { kind: "command"; command: string; cwd?: string; segments?: CommandSegment[] }
  | { kind: "text"; text: string };

/** One simple command of a command line as the rules judged it (the approval card's split). */
export interface CommandSegment {
  text: string;
  decision: "allow" | "ask" | "deny" | "mode";
  rule?: string;
}

export interface Confirmation {
  id: string;
  name: string;
  preview: PreviewSummary;
  decision: ConfirmDecision;
}

export type ToolRowStatus = "running" | ToolStatus;

/** `faded`: the conversation was rewound to before this item (it is history, not context). */
export type ChatItem = ChatItemBody & { faded?: boolean };

type ChatItemBody =
  | { kind: "user"; id: string; turnId?: string; text: string; local?: boolean; attachments?: AttachmentSummary[] }
  | { kind: "assistant"; id: string; turnId: string; text: string; streaming: boolean }
  | { kind: "thinking"; id: string; turnId: string; text: string; streaming: boolean }
  | {
      kind: "tool";
      id: string;
      turnId: string;
      toolUseId: string;
      name: string;
      summary: string;
      status: ToolRowStatus;
      output: string;
      durationMs?: number;
      /** Wall-clock ms when it started running here (live only: drives the elapsed timer). */
      startedAt?: number;
      diff?: DiffStat;
      /** The file the call is about, and (an edit's first changed line, a read's offset) where. */
      file?: { path: string; line?: number };
      /** The question asked before it ran, shown where the row is. */
      confirm?: Confirmation;
      /** A `task` call: the child session it started, shown nested under the row. */
      agent?: AgentView;
      /** What allowed, asked or denied it (`toolStarted.permission`): "allow: rule: Bash(…) (…)". */
      decidedBy?: string;
    }
  | {
      kind: "notice";
      id: string;
      text: string;
      level: "info" | "error";
      local?: boolean;
      undoId?: string;
      /** The turn it was posted in (retry notices fold per turn). */
      turnId?: string;
      /** How many notices of this kind it stands for (a retry shown once, counted). */
      repeats?: number;
    }
  | { kind: "plan"; id: string; turnId: string; plan: string; decision: PlanDecision }
  | {
      kind: "confirm";
      id: string;
      turnId: string;
      toolUseId?: string;
      name: string;
      preview: PreviewSummary;
      decision: ConfirmDecision;
    }
  | { kind: "checkpoint"; id: string; turnId: string; toolsUsed: number; decision: CheckpointDecision }
  | {
      kind: "turnEnd";
      id: string;
      turnId: string;
      outcome: Outcome;
      trail: TrailItem[];
      cause?: InterruptCause;
      error?: TurnError;
      refusal?: Refusal;
      usage?: Usage;
      hint?: Hint;
    };

export type ChatConnection = "starting" | "running" | "stopped";
export type ProviderKind = "anthropic" | "scripted" | "demo";

export interface ChatModel {
  sessionId: string | null;
  state: State | null;
  connection: ChatConnection;
  /** Which provider the server runs (the welcome view says whether it is the offline demo). */
  provider: ProviderKind | null;
  items: ChatItem[];
  nextId: number;
}

export function emptyChat(): ChatModel {
  return { sessionId: null, state: null, connection: "starting", provider: null, items: [], nextId: 1 };
}

/** Kept live output of one running command (the final result replaces it). */
export const LIVE_OUTPUT_CAP = 64 * 1024;

export const MODE_WORDS: Record<Mode, string> = {
  default: "ask before edits",
  acceptEdits: "accept edits",
  plan: "plan",
};

/** Server texts that name a mode by its id ("Mode is now acceptEdits") in plain words. */
export function plainWords(text: string): string {
  return text
    .replace(/\bMode(?: is now|:) (default|acceptEdits|plan)\b/g, (_, mode: Mode) => `Mode: ${MODE_WORDS[mode]}`)
    .replace(/\(mode is now (default|acceptEdits|plan)\)/g, (_, mode: Mode) => `(mode: ${MODE_WORDS[mode]})`)
    // Left alone where the words already precede the id: "accept edits (acceptEdits)".
    .replace(/(?<!accept edits \()\bacceptEdits\b/g, "accept edits");
}

/** `on (effort high)`, `on (16000 tokens)`, `off`. */
export function thinkingWords(thinking: Thinking): string {
  if (!thinking.enabled) return "off";
  if (thinking.effort) return `on (effort ${thinking.effort})`;
  return thinking.budgetTokens ? `on (${thinking.budgetTokens} tokens)` : "on";
}

/** `1 line`, `3 lines`. */
export function plural(count: number, word: string, many = `${word}s`): string {
  return `${count} ${count === 1 ? word : many}`;
}

/** Notices that answer a setting change (mode, thinking, model), and the server's word that the
 *  folder is not trusted when a session opens: not a conversation yet. */
const SETTING_NOTICE = /^(Mode: (ask before edits|accept edits|plan|default|acceptEdits)|Thinking: |Model: |Model switches to |This folder is not trusted \()/;

/**
 * What to do about a failed turn, one hint per kind. `again` is how to retry: "say “continue”"
 * when the prompt stayed in the conversation, "send your prompt again" when the server dropped
 * it (a turn that failed before any answer).
 */
const ERROR_HINTS: Record<ErrorKind, { text: (again: string) => string; command?: Hint["command"] }> = {
  auth: {
    text: (again) => `The API rejected the credentials. Set a valid API key, then ${again}.`,
    command: { id: "tiller.setApiKey", label: "Set API Key…" },
  },
  rate_limit: { text: (again) => `Rate limited by the API. Wait a moment, then ${again}.` },
  overloaded: { text: (again) => `The API is overloaded. Wait a moment, then ${again}.` },
  server: { text: (again) => `The API had a server error. To retry, ${again}.` },
  connection: {
    text: (again) => `Could not reach the API. Check the network or the tiller.baseUrl setting, then ${again}.`,
    command: { id: "tiller.openSettings", label: "Open Settings" },
  },
  timeout: { text: (again) => `The request timed out. To retry, ${again}.` },
  context_too_long: {
    text: () => "The conversation no longer fits the model's context. Type /compact or start a new chat.",
    command: { id: "tiller.newSession", label: "New Chat" },
  },
  invalid_request: {
    text: (again) => `The API refused the request (the logs say why). To try again, ${again}.`,
    command: { id: "tiller.showLogs", label: "Show Logs" },
  },
  output_limit: { text: (again) => `The answer hit the output limit. Ask for smaller pieces, or ${again}.` },
  internal: {
    text: (again) => `The Tiller server hit an internal error (the logs say more). To try again, ${again}.`,
    command: { id: "tiller.showLogs", label: "Show Logs" },
  },
};

/** `promptKept`: false when the server says the prompt was not added to the conversation. */
export function hintFor(kind: ErrorKind, promptKept = true): Hint {
  const hint = ERROR_HINTS[kind] ?? ERROR_HINTS.internal;
  const text = hint.text(promptKept ? "say “continue”" : "send your prompt again");
  return hint.command !== undefined ? { text, command: hint.command } : { text };
}

/** The server's own "send it again" remark, which the hint says instead (one hint, not two). */
const PROMPT_NOT_KEPT = /\s*\(The prompt was not (?:added to|kept in) the conversation[^)]*\)\s*$/;

/** An error message without that remark, and whether the prompt was kept. */
export function splitPromptNote(message: string): { message: string; promptKept: boolean } {
  const kept = !PROMPT_NOT_KEPT.test(message);
  return { message: kept ? message : message.replace(PROMPT_NOT_KEPT, ""), promptKept: kept };
}

function failure(error: TurnError): { error: TurnError; hint: Hint } {
  const { message, promptKept } = splitPromptNote(error.message);
  return { error: { ...error, message }, hint: hintFor(error.kind, promptKept) };
}

const TRAIL_MARKS: Record<ToolStatus, string> = {
  ok: "✓",
  error: "✗",
  denied: "✗",
  interrupted: "✗",
  skipped: "–",
};

/** `read_file ✓ → edit_file ✓ → bash ✗` */
export function formatTrail(trail: TrailItem[]): string {
  return trail.map((item) => `${item.name} ${TRAIL_MARKS[item.status] ?? "?"}`).join(" → ");
}

export function toolMark(status: ToolRowStatus): string {
  return status === "running" ? "…" : (TRAIL_MARKS[status] ?? "?");
}

/** `+12 −3` */
export function formatDiffStat(diff: DiffStat): string {
  return `+${diff.added} −${diff.removed}`;
}

/** `0.4s`, `12s`, `2m 05s` */
export function formatDuration(ms: number): string {
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  return `${Math.floor(seconds / 60)}m ${String(seconds % 60).padStart(2, "0")}s`;
}

/** `12.3k`, `200k`, `1.2M` */
export function formatTokens(tokens: number): string {
  if (tokens < 1000) return String(tokens);
  if (tokens < 1_000_000) {
    const k = tokens / 1000;
    return `${k < 100 ? k.toFixed(1).replace(/\.0$/, "") : Math.round(k)}k`;
  }
  return `${(tokens / 1_000_000).toFixed(1).replace(/\.0$/, "")}M`;
}

export function formatCost(usd: number): string {
  return usd < 0.01 && usd > 0 ? "<$0.01" : `$${usd.toFixed(2)}`;
}

/** `ctx 12k/200k (6%) · $0.03`, or "" until the server sends them. */
export function usageText(state: State | null): string {
  if (state === null) return "";
  const parts: string[] = [];
  // Nothing before the first model call: a fresh chat shows no "ctx 0" or "$0.00".
  const context = state.context;
  if (context !== undefined && context !== null && context.windowTokens > 0 && context.usedTokens > 0) {
    const share = Math.round((100 * context.usedTokens) / context.windowTokens);
    parts.push(`ctx ${formatTokens(context.usedTokens)}/${formatTokens(context.windowTokens)} (${share}%)`);
  }
  if (typeof state.sessionCostUsd === "number" && state.sessionCostUsd > 0) {
    parts.push(formatCost(state.sessionCostUsd));
  }
  return parts.join(" · ");
}

/** One line that says what a tool call is about: the command, the path, the pattern… */
export function summarizeInput(name: string, input: unknown): string {
  if (typeof input !== "object" || input === null) {
    return "";
  }
  const fields = input as Record<string, unknown>;
  for (const key of ["command", "path", "pattern", "plan"]) {
    const value = fields[key];
    if (typeof value === "string" && value !== "") {
      const line = value.split("\n")[0] ?? "";
      return line.length > 120 ? `${line.slice(0, 119)}…` : line;
    }
  }
  if (name === "todo_write" && Array.isArray(fields.todos)) {
    return plural(fields.todos.length, "item");
  }
  const json = JSON.stringify(input);
  return json === "{}" ? "" : json.length > 120 ? `${json.slice(0, 119)}…` : json;
}

const FILE_TOOLS = new Set(["read_file", "write_file", "edit_file", "list_files"]);

/** The file a tool call is about (its `path`), and a read's first line, for the row's link. */
export function fileOf(name: string, input: unknown): { path: string; line?: number } | undefined {
  if (!FILE_TOOLS.has(name) || typeof input !== "object" || input === null) return undefined;
  const fields = input as Record<string, unknown>;
  if (typeof fields.path !== "string" || fields.path === "") return undefined;
  const offset = fields.offset;
  return typeof offset === "number" && Number.isInteger(offset) && offset > 0 ? { path: fields.path, line: offset } : { path: fields.path };
}

/** What a confirmation card shows of a preview, from the live request or a transcript entry. */
export function summarizePreview(preview: unknown): PreviewSummary {
  const fields = typeof preview === "object" && preview !== null ? (preview as Record<string, unknown>) : {};
  const str = (key: string): string => (typeof fields[key] === "string" ? (fields[key] as string) : "");
  switch (fields.kind) {
    case "diff":
      return { kind: "diff", path: str("path") };
    case "command": {
      const segments = commandSegments(fields.segments);
      return {
        kind: "command",
        command: str("command"),
        ...(str("cwd") !== "" ? { cwd: str("cwd") } : {}),
        ...(segments !== undefined ? { segments } : {}),
      };
    }
    default:
      return { kind: "text", text: str("text") };
  }
}

const SEGMENT_DECISIONS: ReadonlySet<string> = new Set(["allow", "ask", "deny", "mode"]);

/** A preview's `segments`, kept only when well formed (the webview shows them as they are). */
function commandSegments(value: unknown): CommandSegment[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const segments: CommandSegment[] = [];
  for (const raw of value as unknown[]) {
    if (typeof raw !== "object" || raw === null) continue;
    const fields = raw as Record<string, unknown>;
    const { text, decision, rule } = fields;
    if (typeof text !== "string" || typeof decision !== "string" || !SEGMENT_DECISIONS.has(decision)) continue;
    segments.push({ text, decision: decision as CommandSegment["decision"], ...(typeof rule === "string" ? { rule } : {}) });
  }
  return segments.length > 0 ? segments : undefined;
}

function withItems(model: ChatModel, items: ChatItem[], used = 0): ChatModel {
  return { ...model, items, nextId: model.nextId + used };
}

function push(model: ChatModel, make: (id: string) => ChatItem): ChatModel {
  return withItems(model, [...model.items, make(`i${model.nextId}`)], 1);
}

function updateWhere(model: ChatModel, match: (item: ChatItem) => boolean, update: (item: ChatItem) => ChatItem): ChatModel {
  return withItems(model, model.items.map((item) => (match(item) ? update(item) : item)));
}

function switchSession(model: ChatModel, sessionId: string): ChatModel {
  if (model.sessionId === sessionId) {
    return model;
  }
  const items = model.sessionId === null ? model.items : [];
  return { ...model, sessionId, items };
}

/**
 * A new State: the session may have changed (new/resume/fork), which starts a new chat. While
 * no turn runs (`busy` false) nothing shows as in progress: text still streaming is settled and
 * a row still running is marked interrupted (its `turnEnded` was lost, e.g. cut by a crash).
 */
export function applyState(model: ChatModel, state: State, now?: number): ChatModel {
  const next: ChatModel = { ...switchSession(model, state.sessionId), state, connection: "running" };
  return state.busy ? next : settleIdle(next, now);
}

function settleIdle(model: ChatModel, now?: number): ChatModel {
  const open = (item: ChatItem): boolean =>
    ((item.kind === "assistant" || item.kind === "thinking") && item.streaming) ||
    (item.kind === "tool" && item.status === "running" && item.confirm?.decision.state !== "pending");
  if (!model.items.some(open)) return model;
  return updateWhere(model, open, (item) => {
    if (item.kind !== "tool") return { ...item, streaming: false } as ChatItem;
    const durationMs = item.durationMs ?? (item.startedAt !== undefined && now !== undefined ? Math.max(0, now - item.startedAt) : undefined);
    const agent = item.agent !== undefined ? { agent: settled(item.agent, "interrupted", now) } : {};
    return { ...item, status: "interrupted", ...(durationMs !== undefined ? { durationMs } : {}), ...agent };
  });
}

export function setProvider(model: ChatModel, provider: ProviderKind | null): ChatModel {
  return model.provider === provider ? model : { ...model, provider };
}

/** Why the connection left "running": a deliberate restart or the server going away. */
export type StopReason = "restart" | "crash" | "stopped";

const STOP_NOTICES: Record<StopReason, string> = {
  restart: "Restarting the Tiller server…",
  crash: "The Tiller server stopped; restarting it…",
  stopped: "The Tiller server is not running.",
};

const OLDER_NOT_SHOWN = "Older messages of this session are not shown.";

/** Follows a stop notice once a new server is up, so the chat does not end on "stopped". */
export const RESTARTED_NOTICE = "The Tiller server restarted.";

const CONNECTION_NOTICES: ReadonlySet<string> = new Set([...Object.values(STOP_NOTICES), RESTARTED_NOTICE]);

/** The last word the chat has on the connection: a stop, a failure to start (a local error
 *  notice), or "restarted"; undefined when it has none (the first start). */
function lastConnectionNotice(model: ChatModel): string | undefined {
  for (let index = model.items.length - 1; index >= 0; index -= 1) {
    const item = model.items[index]!;
    if (item.kind === "notice" && item.local === true && (CONNECTION_NOTICES.has(item.text) || item.level === "error")) return item.text;
  }
  return undefined;
}

export function applyConnection(model: ChatModel, connection: ChatConnection, reason?: StopReason): ChatModel {
  if (connection === model.connection) {
    return model;
  }
  let next: ChatModel = { ...model, connection };
  if (model.connection === "running" && connection !== "running") {
    const why: StopReason = reason ?? (connection === "starting" ? "crash" : "stopped");
    next = endOpenItems(next, null);
    next = push(next, (id) => ({ kind: "notice", id, level: why === "restart" ? "info" : "error", text: STOP_NOTICES[why], local: true }));
  } else if (connection === "running") {
    const last = lastConnectionNotice(next);
    if (last !== undefined && last !== RESTARTED_NOTICE) {
      next = push(next, (id) => ({ kind: "notice", id, level: "info", text: RESTARTED_NOTICE, local: true }));
    }
  }
  return next;
}

function closeConfirm(confirm: Confirmation | undefined): Confirmation | undefined {
  return confirm !== undefined && confirm.decision.state === "pending" ? { ...confirm, decision: { state: "cancelled" } } : confirm;
}

/** Stops streaming and dismisses pending cards, for one turn or (turnId null) for all. */
function endOpenItems(model: ChatModel, turnId: string | null, toolStatus: ToolStatus = "interrupted", now?: number): ChatModel {
  const inTurn = (item: ChatItem): boolean => turnId === null || ("turnId" in item && item.turnId === turnId);
  return updateWhere(model, inTurn, (item) => {
    switch (item.kind) {
      case "assistant":
      case "thinking":
        return item.streaming ? { ...item, streaming: false } : item;
      case "tool": {
        if (item.status !== "running") {
          return item.confirm?.decision.state === "pending" ? { ...item, confirm: closeConfirm(item.confirm) } : item;
        }
        const durationMs = item.durationMs ?? (item.startedAt !== undefined && now !== undefined ? Math.max(0, now - item.startedAt) : undefined);
        const agent = item.agent !== undefined ? { agent: settled(item.agent, outcomeOf(toolStatus), now) } : {};
        return { ...item, status: toolStatus, confirm: closeConfirm(item.confirm), ...(durationMs !== undefined ? { durationMs } : {}), ...agent };
      }
      case "plan":
      case "confirm":
      case "checkpoint":
        return item.decision.state === "pending" ? ({ ...item, decision: { state: "cancelled" } } as ChatItem) : item;
      default:
        return item;
    }
  });
}

/** Marks streamed text as complete (a tool, a card or another stream follows it). */
function settleStreaming(model: ChatModel): ChatModel {
  if (!model.items.some((item) => (item.kind === "assistant" || item.kind === "thinking") && item.streaming)) {
    return model;
  }
  return updateWhere(
    model,
    (item) => (item.kind === "assistant" || item.kind === "thinking") && item.streaming,
    (item) => ({ ...item, streaming: false }) as ChatItem,
  );
}

function appendStreamed(model: ChatModel, kind: "assistant" | "thinking", turnId: string, text: string, streaming = true): ChatModel {
  const last = model.items.at(-1);
  if (streaming && last !== undefined && last.kind === kind && last.turnId === turnId && last.streaming) {
    return withItems(model, [...model.items.slice(0, -1), { ...last, text: last.text + text }]);
  }
  return push(settleStreaming(model), (id) => ({ kind, id, turnId, text, streaming }));
}

/**
 * The step restarted: its streamed text and thinking so far are void. They are the turn's
 * last streamed items, back to anything else than a notice (the server says it retries
 * before it restarts: that notice stays).
 */
function discardStep(model: ChatModel, turnId: string): ChatModel {
  const discarded = new Set<ChatItem>();
  for (let index = model.items.length - 1; index >= 0; index -= 1) {
    const item = model.items[index]!;
    if ((item.kind === "assistant" || item.kind === "thinking") && item.turnId === turnId) {
      discarded.add(item);
    } else if (item.kind !== "notice") {
      break;
    }
  }
  return discarded.size === 0 ? model : withItems(model, model.items.filter((item) => !discarded.has(item)));
}

function findTool(model: ChatModel, toolUseId: string): Extract<ChatItem, { kind: "tool" }> | undefined {
  return model.items.find((item): item is Extract<ChatItem, { kind: "tool" }> => item.kind === "tool" && item.toolUseId === toolUseId);
}

function updateTool(
  model: ChatModel,
  toolUseId: string,
  update: (item: Extract<ChatItem, { kind: "tool" }>) => Extract<ChatItem, { kind: "tool" }>,
): ChatModel {
  return updateWhere(model, (item) => item.kind === "tool" && item.toolUseId === toolUseId, (item) => update(item as Extract<ChatItem, { kind: "tool" }>));
}

/**
 * The output a finished row shows: the result's, except that what streamed live is never lost
 * (an interrupted command whose result lacks its partial output keeps it, marked).
 */
function keptOutput(status: ToolStatus, final: string, live: string): string {
  if (final === "" || live === "") return final !== "" ? final : live;
  if (status !== "interrupted" || final.includes(live.trim())) return final;
  return `${live.replace(/\n?$/, "\n")}[${final.trim()}]`;
}

function keepTail(text: string, cap: number): string {
  return text.length <= cap ? text : `… [earlier output not shown]\n${text.slice(text.length - cap)}`;
}

/** Text of a notice without its numbers ("retrying in 0.4 s", "(2/3)"): notices of one retry
 *  kind have the same; undefined for a notice that is not about a retry. */
export function retryKind(text: string): string | undefined {
  return /\bretrying\b|^The answer restarted\b/.test(text) ? text.replace(/\d+(?:\.\d+)?/g, "#") : undefined;
}

/**
 * A server notice. A retry notice is shown once per kind and turn: a repeat replaces the one
 * shown before (at the end, where the user looks) and counts it, instead of stacking lines.
 */
function pushNotice(model: ChatModel, turnId: string | null, text: string): ChatModel {
  const kind = turnId !== null && turnId !== "" ? retryKind(text) : undefined;
  let earlier: Extract<ChatItem, { kind: "notice" }> | undefined;
  for (let index = model.items.length - 1; index >= 0 && kind !== undefined && earlier === undefined; index -= 1) {
    const item = model.items[index]!;
    if (item.kind === "notice" && item.turnId === turnId && item.local !== true && retryKind(item.text) === kind) earlier = item;
  }
  const base = earlier === undefined ? model : withItems(model, model.items.filter((item) => item !== earlier));
  const repeats = earlier !== undefined ? (earlier.repeats ?? 1) + 1 : undefined;
  return push(base, (id) => ({
    kind: "notice",
    id,
    level: "info",
    text,
    ...(turnId !== null && turnId !== "" ? { turnId } : {}),
    ...(repeats !== undefined ? { repeats } : {}),
  }));
}

function squeeze(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/**
 * A plan card is about to show `plan`: the same text just streamed as the turn's answer (a plan
 * given as the final text, or written out before exit_plan_mode) is not shown twice. The
 * streamed copy goes; what it said around the plan ("Here is the plan:") stays.
 */
function foldPlanText(model: ChatModel, turnId: string, plan: string): ChatModel {
  const wanted = squeeze(plan);
  if (wanted === "") return model;
  for (let index = model.items.length - 1; index >= 0; index -= 1) {
    const item = model.items[index]!;
    if (item.kind === "assistant" && item.turnId === turnId) {
      const text = squeeze(item.text);
      if (!text.includes(wanted)) return model;
      const rest = text === wanted ? "" : item.text.includes(plan.trim()) ? item.text.replace(plan.trim(), "").trim() : "";
      if (rest === "") return withItems(model, model.items.filter((other) => other !== item));
      return withItems(model, model.items.map((other) => (other === item ? { ...item, text: rest, streaming: false } : other)));
    }
    // Between the text and the card: thinking, notices, the exit_plan_mode call itself.
    const between = item.kind === "thinking" || item.kind === "notice" || (item.kind === "tool" && item.name === "exit_plan_mode");
    if (!between) return model;
  }
  return model;
}

/**
 * The one renderer: applies one `tiller/event` notification, live or replayed from the
 * transcript (`applyEntry`). Questions (plans, confirmations, checkpoints) are drawn by their
 * `…Requested` event; the request that follows adopts that card (`open…Card`); a `…Decided`
 * event decides a card nobody answered here and leaves an answered one as it is.
 * `now` (ms) stamps when a tool started running, for the live elapsed timer; the transcript
 * path passes none.
 */
export function applyEvent(current: ChatModel, event: TillerEvent, now?: number): ChatModel {
  if (event.parentTurnId !== undefined) return applyToAgent(current, event, now);
  const model = switchSession(current, event.sessionId);
  const turnId = event.turnId ?? "";
  switch (event.type) {
    case "turnStarted":
      return push(settleStreaming(model), (id) => ({
        kind: "user",
        id,
        turnId,
        text: event.prompt,
        ...(event.attachments !== undefined && event.attachments.length > 0 ? { attachments: event.attachments } : {}),
      }));
    case "textDelta":
      return appendStreamed(model, "assistant", turnId, event.text);
    case "thinkingDelta":
      return appendStreamed(model, "thinking", turnId, event.text);
    case "toolStarted": {
      const summary = summarizeInput(event.name, event.input);
      const file = fileOf(event.name, event.input);
      const standalone = model.items.find((item) => item.kind === "confirm" && item.toolUseId === event.toolUseId);
      const make = (id: string): ChatItem => ({
        kind: "tool",
        id,
        turnId,
        toolUseId: event.toolUseId,
        name: event.name,
        summary,
        status: "running",
        output: "",
        ...(file !== undefined ? { file } : {}),
        ...(event.permission !== undefined ? { decidedBy: `${event.permission.decision}: ${event.permission.by}` } : {}),
        // Waiting for the user is not running: the timer starts once the call is allowed.
        ...(now !== undefined && (event.permission === undefined || event.permission.decision === "allow") ? { startedAt: now } : {}),
        ...(standalone !== undefined && standalone.kind === "confirm"
          ? { confirm: { id: standalone.id, name: standalone.name, preview: standalone.preview, decision: standalone.decision } }
          : {}),
      });
      if (standalone !== undefined) {
        // The question came first (an older server): the row takes the card's place.
        return withItems(model, model.items.map((item) => (item === standalone ? make(`i${model.nextId}`) : item)), 1);
      }
      return push(settleStreaming(model), make);
    }
    case "toolOutput": {
      const tool = findTool(model, event.toolUseId);
      if (tool === undefined || tool.status !== "running") return model;
      return updateTool(model, event.toolUseId, (item) => ({ ...item, output: keepTail(item.output + event.text, LIVE_OUTPUT_CAP) }));
    }
    case "toolFinished": {
      const known = findTool(model, event.toolUseId);
      const fields = {
        status: event.status,
        ...(event.diff !== undefined ? { diff: event.diff } : {}),
      };
      const line = event.line;
      if (known === undefined) {
        return push(model, (id) => ({
          kind: "tool",
          id,
          turnId,
          toolUseId: event.toolUseId,
          name: event.name,
          summary: "",
          output: event.output,
          durationMs: event.durationMs,
          ...fields,
        }));
      }
      return updateTool(model, event.toolUseId, (item) => {
        // An interrupted command's result carries its partial output; a server that sends
        // none keeps what streamed live. Same for a duration the server could not measure.
        const output = keptOutput(event.status, event.output, item.output);
        const measured = event.status !== "interrupted" || event.durationMs > 0 || item.startedAt === undefined || now === undefined;
        const durationMs = measured ? event.durationMs : Math.max(0, now - (item.startedAt ?? now));
        const file = item.file !== undefined && line !== undefined ? { file: { ...item.file, line } } : {};
        const agent = item.agent !== undefined ? { agent: settled(item.agent, outcomeOf(event.status), now) } : {};
        return { ...item, ...fields, ...file, output, durationMs, confirm: closeConfirm(item.confirm), ...agent };
      });
    }
    case "agentStarted":
      return updateTool(model, event.toolUseId, (item) => ({ ...item, agent: startedAgent(event, now) }));
    case "notice":
      return pushNotice(settleStreaming(model), event.turnId, plainWords(event.text));
    case "hookActed":
      return push(settleStreaming(model), (id) => ({ kind: "notice", id, level: "info", text: hookLine(event) }));
    case "queueDropped": {
      const prompts = event.prompts ?? [];
      if (prompts.length === 0) return model;
      const text = `${prompts.length} queued prompt(s) will not run: ${prompts.map((p) => `“${p.length > 60 ? `${p.slice(0, 59)}…` : p}”`).join(", ")}`;
      return push(model, (id) => ({ kind: "notice", id, level: "info", text }));
    }
    case "stepRestarted":
      return pushNotice(discardStep(model, turnId), event.turnId, `The answer restarted (${event.reason}); its first attempt is not shown.`);
    case "steered":
      return pushNotice(settleStreaming(model), event.turnId, `Steered: ${event.text}`);
    case "planRequested":
      return push(foldPlanText(settleStreaming(model), turnId, event.plan), (id) => ({ kind: "plan", id, turnId, plan: event.plan, decision: { state: "pending" } }));
    case "planDecided": {
      // The server's word on the plan: a card the user already answered here keeps that answer.
      const plan = latestCard(model, "plan", turnId);
      const decision: PlanDecision = event.approved ? { state: "approved" } : { state: "rejected", feedback: event.feedback };
      if (plan !== undefined) {
        return undecided(plan.decision) ? updateWhere(model, (item) => item.id === plan.id, (item) => ({ ...item, decision }) as ChatItem) : model;
      }
      const text = event.approved ? "Plan approved." : `Plan rejected${event.feedback ? `: ${event.feedback}` : "."}`;
      return push(model, (id) => ({ kind: "notice", id, level: "info", text }));
    }
    case "confirmRequested": {
      const id = `i${model.nextId}`;
      const confirm: Confirmation = { id, name: event.name, preview: summarizePreview(event.preview), decision: { state: "pending" } };
      return addConfirmation({ ...model, nextId: model.nextId + 1 }, turnId, event.toolUseId, confirm);
    }
    case "confirmDecided": {
      const decision: ConfirmDecision = event.feedback ? { state: event.decision, feedback: event.feedback } : { state: event.decision };
      return decideConfirmWhere(model, (_, toolUseId) => toolUseId === event.toolUseId, decision, now, undecided);
    }
    case "checkpointRequested":
      return push(settleStreaming(model), (id) => ({ kind: "checkpoint", id, turnId, toolsUsed: event.toolsUsed, decision: { state: "pending" } }));
    case "checkpointDecided": {
      const card = latestCard(model, "checkpoint", turnId);
      return card === undefined ? model : decideCheckpointWhere(model, card.id, { state: event.continue ? "continue" : "stop" }, undecided);
    }
    case "command":
      return addHandledPrompt(settleStreaming(model), event.text, event.message);
    case "rewound":
      return rewound(model, turnId, event);
    case "rewindUndone":
      return rewindUndone(model, event);
    case "turnEnded": {
      const ended = endOpenItems(model, turnId, event.outcome === "interrupted" ? "interrupted" : "error", now);
      return push(ended, (id) => ({
        kind: "turnEnd",
        id,
        turnId,
        outcome: event.outcome,
        trail: event.trail ?? [],
        ...(event.cause !== undefined ? { cause: event.cause } : {}),
        ...(event.error !== undefined ? failure(event.error) : {}),
        ...(event.refusal !== undefined ? { refusal: event.refusal } : {}),
        ...(event.usage !== undefined ? { usage: event.usage } : {}),
      }));
    }
    default:
      return model;
  }
}

/** A subagent's event (it carries `parentTurnId`): it updates the `task` row that started it;
 *  the chat's own session stays the one shown. */
function applyToAgent(model: ChatModel, event: TillerEvent, now?: number): ChatModel {
  const owns = (item: ChatItem): boolean => item.kind === "tool" && item.agent?.sessionId === event.sessionId;
  if (!model.items.some(owns)) return model;
  return updateWhere(model, owns, (item) => {
    const row = item as Extract<ChatItem, { kind: "tool" }>;
    return row.agent === undefined ? row : { ...row, agent: applyChildEvent(row.agent, event, summarizeInput, now) };
  });
}

export function addNotice(model: ChatModel, text: string, level: "info" | "error" = "info", local = true): ChatModel {
  return push(model, (id) => ({ kind: "notice", id, level, text: plainWords(text), local }));
}

/** `addNotice`, unless the chat already ends on that very notice. */
export function addNoticeOnce(model: ChatModel, text: string, level: "info" | "error" = "info"): ChatModel {
  const words = plainWords(text);
  const last = model.items.at(-1);
  return last !== undefined && last.kind === "notice" && last.text === words && last.level === level ? model : addNotice(model, text, level);
}

const HOOK_OUTCOME_WORDS: Record<HookOutcome, string> = {
  allowed: "allowed the call",
  denied: "denied the call",
  asked: "asks you",
  rewroteInput: "rewrote the input",
  addedContext: "added context for the model",
  fedBack: "fed back to the model",
  blockedPrompt: "blocked the prompt",
  continued: "sent the model back to work",
  stopped: "stopped the turn",
  message: "says",
};

/** `hookActed` as one line: `PreToolUse hook: ./guard.py denied the call: no rm`. */
export function hookLine(event: { event: string; hooks: string; outcome: HookOutcome; message: string }): string {
  const message = event.message.split("\n")[0] ?? "";
  if (event.outcome === "message") return `${event.event}: ${message}`;
  const head = `${event.event} ${event.hooks} ${HOOK_OUTCOME_WORDS[event.outcome]}`;
  return message !== "" ? `${head}: ${message}` : head;
}

/** A prompt the server handled itself (slash command): show it with the server's answer. */
export function addHandledPrompt(model: ChatModel, prompt: string, message: string | undefined): ChatModel {
  const withPrompt = push(model, (id) => ({ kind: "user", id, text: prompt, local: true }));
  return message !== undefined && message !== "" ? addNotice(withPrompt, message) : withPrompt;
}

type Card = Extract<ChatItem, { kind: "plan" | "checkpoint" }>;

function isCard(item: ChatItem): item is Card {
  return item.kind === "plan" || item.kind === "checkpoint";
}

/** The last card of `kind` in turn `turnId` (with `pendingOnly`, the last one still waiting). */
function latestCard<K extends Card["kind"]>(model: ChatModel, kind: K, turnId: string, pendingOnly = false): Extract<Card, { kind: K }> | undefined {
  for (let index = model.items.length - 1; index >= 0; index -= 1) {
    const item = model.items[index]!;
    if (isCard(item) && item.kind === kind && item.turnId === turnId && (!pendingOnly || pending(item.decision))) {
      return item as Extract<Card, { kind: K }>;
    }
  }
  return undefined;
}

/** Not answered here: still waiting, or dismissed because the request was cancelled (the
 *  server's `…Decided` event then says how it ended, e.g. a timeout that failed closed). */
function undecided(decision: { state: string }): boolean {
  return decision.state === "pending" || decision.state === "cancelled";
}

function pending(decision: { state: string }): boolean {
  return decision.state === "pending";
}

/** The card a server request answers, and the model with it. */
export interface OpenedCard {
  model: ChatModel;
  id: string;
}

export function addPlanCard(model: ChatModel, id: string, turnId: string, plan: string): ChatModel {
  const settled = foldPlanText(settleStreaming(model), turnId, plan);
  return withItems(settled, [...settled.items, { kind: "plan", id, turnId, plan, decision: { state: "pending" } }]);
}

/**
 * The card `tiller/approvePlan` asks on: the one its `planRequested` event drew (the latest
 * pending plan of the turn), else a new card `id` (a server that posts no such event).
 */
export function openPlanCard(model: ChatModel, id: string, turnId: string, plan: string): OpenedCard {
  const drawn = latestCard(model, "plan", turnId, true);
  return drawn !== undefined ? { model, id: drawn.id } : { model: addPlanCard(model, id, turnId, plan), id };
}

export function decidePlan(model: ChatModel, id: string, result: ApprovePlanResult | null): ChatModel {
  const decision: PlanDecision = result === null ? { state: "cancelled" } : result.approved ? { state: "approved" } : { state: "rejected", feedback: result.feedback };
  return updateWhere(
    model,
    (item) => item.id === id && item.kind === "plan" && item.decision.state === "pending",
    (item) => ({ ...item, decision }) as ChatItem,
  );
}

/** A confirmation joins its tool row (the question sits where the row is, before output). */
function addConfirmation(model: ChatModel, turnId: string, toolUseId: string | undefined, confirm: Confirmation): ChatModel {
  const settled = settleStreaming(model);
  if (toolUseId !== undefined && findTool(settled, toolUseId) !== undefined) {
    return updateTool(settled, toolUseId, (item) => ({ ...item, confirm }));
  }
  return withItems(settled, [
    ...settled.items,
    { kind: "confirm", id: confirm.id, turnId, ...(toolUseId !== undefined ? { toolUseId } : {}), name: confirm.name, preview: confirm.preview, decision: confirm.decision },
  ]);
}

export function addConfirmCard(model: ChatModel, id: string, params: ConfirmToolParams): ChatModel {
  return addConfirmation(model, params.turnId, params.toolUseId, {
    id,
    // A subagent's question names it (its call has no row in this chat).
    name: params.agent !== undefined ? `${params.agent.name} agent: ${params.name}` : params.name,
    preview: summarizePreview(params.preview),
    decision: { state: "pending" },
  });
}

/**
 * The card `tiller/confirmTool` asks on: the pending confirmation its `confirmRequested` event
 * drew for the same tool call, else a new card `id` (a server that posts no such event).
 */
export function openConfirmCard(model: ChatModel, id: string, params: ConfirmToolParams): OpenedCard {
  for (const item of model.items) {
    if (item.kind === "confirm" && item.toolUseId === params.toolUseId && pending(item.decision)) {
      return { model, id: item.id };
    }
    if (item.kind === "tool" && item.toolUseId === params.toolUseId && item.confirm !== undefined && pending(item.confirm.decision)) {
      return { model, id: item.confirm.id };
    }
  }
  return { model: addConfirmCard(model, id, params), id };
}

/** What a card shows of the answer given to `tiller/confirmTool` (undefined: cancelled). */
export function confirmDecision(result: ConfirmToolResult | undefined): ConfirmDecision {
  if (result === undefined) return { state: "cancelled" };
  return result.feedback ? { state: result.decision, feedback: result.feedback } : { state: result.decision };
}

function decideConfirmWhere(
  model: ChatModel,
  match: (id: string, toolUseId: string | undefined) => boolean,
  decision: ConfirmDecision,
  now?: number,
  open: (decision: ConfirmDecision) => boolean = pending,
): ChatModel {
  return updateWhere(
    model,
    (item) =>
      (item.kind === "confirm" && match(item.id, item.toolUseId) && open(item.decision)) ||
      (item.kind === "tool" && item.confirm !== undefined && match(item.confirm.id, item.toolUseId) && open(item.confirm.decision)),
    (item) => {
      if (item.kind === "tool" && item.confirm !== undefined) {
        const restarted = now !== undefined && item.status === "running" && (decision.state === "allow" || decision.state === "allowSession" || decision.state === "allowAlways");
        return { ...item, confirm: { ...item.confirm, decision }, ...(restarted ? { startedAt: now } : {}) };
      }
      return { ...item, decision } as ChatItem;
    },
  );
}

/** What a question the server asks is about, so that what withdraws it can find it. */
export interface Asked {
  kind: "plan" | "confirm" | "checkpoint";
  turnId: string;
  toolUseId?: string;
}

/** Whether `event` withdraws question `asked`: its turn ended, or the server decided it. */
export function withdraws(event: TillerEvent, asked: Asked): boolean {
  if (event.turnId !== asked.turnId) return false;
  switch (event.type) {
    case "turnEnded":
      return true;
    case "confirmDecided":
      return asked.kind === "confirm" && event.toolUseId === asked.toolUseId;
    case "planDecided":
      return asked.kind === "plan";
    case "checkpointDecided":
      return asked.kind === "checkpoint";
    default:
      return false;
  }
}

/** The user's answer on card `id` (only a pending card takes it). */
export function decideConfirm(model: ChatModel, id: string, decision: ConfirmDecision, now?: number): ChatModel {
  return decideConfirmWhere(model, (cardId) => cardId === id, decision, now);
}

export function addCheckpointCard(model: ChatModel, id: string, turnId: string, toolsUsed: number): ChatModel {
  const settled = settleStreaming(model);
  return withItems(settled, [...settled.items, { kind: "checkpoint", id, turnId, toolsUsed, decision: { state: "pending" } }]);
}

/**
 * The card `tiller/checkpoint` asks on: the one its `checkpointRequested` event drew (the
 * latest pending checkpoint of the turn), else a new card `id`.
 */
export function openCheckpointCard(model: ChatModel, id: string, turnId: string, toolsUsed: number): OpenedCard {
  const drawn = latestCard(model, "checkpoint", turnId, true);
  return drawn !== undefined ? { model, id: drawn.id } : { model: addCheckpointCard(model, id, turnId, toolsUsed), id };
}

/** What a card shows of the answer given to `tiller/checkpoint` (undefined: cancelled). */
export function checkpointDecision(result: CheckpointResult | undefined): CheckpointDecision {
  return { state: result === undefined ? "cancelled" : result.continue ? "continue" : "stop" };
}

function decideCheckpointWhere(model: ChatModel, id: string, decision: CheckpointDecision, open: (decision: CheckpointDecision) => boolean): ChatModel {
  return updateWhere(
    model,
    (item) => item.id === id && item.kind === "checkpoint" && open(item.decision),
    (item) => ({ ...item, decision }) as ChatItem,
  );
}

/** The user's answer on card `id` (only a pending card takes it). */
export function decideCheckpoint(model: ChatModel, id: string, decision: CheckpointDecision): ChatModel {
  return decideCheckpointWhere(model, id, decision, pending);
}

/** A rewind's (or its undo's) files: by effect, or only the old view (seen from now) in entries journaled before the effects existed. */
export interface FileChanges {
  reverted?: unknown;
  deleted?: unknown;
  restored?: unknown;
  changed?: unknown;
  added?: unknown;
  removed?: unknown;
}

/** What a rewind or its undo does to files, counted by effect: "1 reverted, 2 deleted" (zero counts left out), or "" when no file changes. */
export function fileEffects(changes: FileChanges): string {
  const count = (files: unknown, old: unknown): number => (Array.isArray(files) ? files.length : Array.isArray(old) ? old.length : 0);
  const counts: [number, string][] = [
    [count(changes.reverted, changes.changed), "reverted"],
    [count(changes.deleted, changes.added), "deleted"],
    [count(changes.restored, changes.removed), "restored"],
  ];
  return counts
    .filter(([n]) => n > 0)
    .map(([n, effect]) => `${n} ${effect}`)
    .join(", ");
}

function shorten(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

/** Files and/or the conversation went back to before turn `turnId`: the rewound turns fade. */
function rewound(model: ChatModel, turnId: string, event: Extract<TillerEvent, { type: "rewound" }>): ChatModel {
  const what = [event.files ? `files (${fileEffects(event) || "no changes"})` : "", event.conversation ? "the conversation" : ""].filter(Boolean).join(" and ");
  const prompt = model.items.find((item) => item.kind === "user" && item.turnId === turnId);
  const where = prompt !== undefined && prompt.kind === "user" ? `“${shorten(prompt.text.split("\n")[0] ?? "", 60)}”` : "an earlier prompt";
  // A prompt not drawn is older than all that is (a transcript's older entries are left out):
  // then everything of the conversation shown was rewound.
  const from = prompt !== undefined ? model.items.indexOf(prompt) : 0;
  const conversational = (item: ChatItem): boolean => item.kind !== "notice" || !(CONNECTION_NOTICES.has(item.text) || item.text === OLDER_NOT_SHOWN);
  const faded = event.conversation
    ? withItems(model, model.items.map((item, index) => (index >= from && conversational(item) && item.faded !== true ? { ...item, faded: true } : item)))
    : model;
  const undoId = typeof event.undoId === "string" ? event.undoId : "";
  return push(faded, (id) => ({ kind: "notice", id, level: "info", text: `Rewound ${what || "nothing"} to before ${where}.`, ...(undoId !== "" ? { undoId } : {}) }));
}

/** The rewind `undoId` was undone: nothing is faded any more, and its undo is spent. */
function rewindUndone(model: ChatModel, event: Extract<TillerEvent, { type: "rewindUndone" }>): ChatModel {
  const undoId = typeof event.undoId === "string" ? event.undoId : "";
  const settled = updateWhere(
    model,
    (item) => item.faded === true || (item.kind === "notice" && item.undoId === undoId && undoId !== ""),
    (item) => {
      const { faded: _faded, ...rest } = item;
      if (rest.kind === "notice") {
        const { undoId: _gone, ...notice } = rest;
        return notice;
      }
      return rest as ChatItem;
    },
  );
  const effects = fileEffects(event);
  return addNotice(settled, `Rewind undone: ${effects !== "" ? `files ${effects}` : "no file changes"}.`, "info", false);
}

/** Entry kinds the journal folds: all the deltas of a stream become one entry. */
const FOLDED: Readonly<Record<string, TillerEvent["type"]>> = { assistantText: "textDelta", assistantThinking: "thinkingDelta" };

/**
 * A transcript entry `{seq, turnId, kind, ...fields}` as the event it was journaled from
 * (undefined for what is not an entry). Kinds no event has (`sliced`) pass through, and
 * `applyEvent` skips them like any event it does not know.
 */
export function entryEvent(sessionId: string, entry: unknown): TillerEvent | undefined {
  if (typeof entry !== "object" || entry === null) {
    return undefined;
  }
  const { kind, turnId, seq, ...fields } = entry as Record<string, unknown>;
  if (typeof kind !== "string") {
    return undefined;
  }
  const event = { ...fields, type: FOLDED[kind] ?? kind, sessionId, turnId: typeof turnId === "string" ? turnId : null, seq: typeof seq === "number" ? seq : 0 };
  return event as unknown as TillerEvent;
}

/** Applies one transcript entry: the event it records, through the one renderer. */
export function applyEntry(model: ChatModel, sessionId: string, entry: unknown): ChatModel {
  const event = entryEvent(sessionId, entry);
  return event === undefined ? model : applyEvent(model, event);
}

/**
 * Redraws a chat from `tiller/session/transcript` entries. `more` says older entries were left
 * out. `carry` are local items (e.g. the restart notice) kept after the redrawn ones.
 */
export function fromTranscript(sessionId: string, entries: unknown[], more = false, carry: ChatItem[] = []): ChatModel {
  let model: ChatModel = { ...emptyChat(), sessionId, connection: "running" };
  if (more) {
    model = addNotice(model, OLDER_NOT_SHOWN);
  }
  for (const entry of entries) {
    model = applyEntry(model, sessionId, entry);
  }
  model = endOpenItems(model, null);
  for (const item of carry) {
    model = push(model, (id) => ({ ...item, id }));
  }
  return model;
}

/**
 * What a redraw after a restart keeps of the current chat: the connection notices at its end
 * (the server never saw them), so "the server stopped; restarting…" survives the redraw.
 */
export function trailingConnectionNotices(model: ChatModel): ChatItem[] {
  const kept: ChatItem[] = [];
  for (let index = model.items.length - 1; index >= 0; index -= 1) {
    const item = model.items[index]!;
    if (item.kind !== "notice" || item.local !== true) break;
    if (CONNECTION_NOTICES.has(item.text)) kept.unshift(item);
  }
  return kept;
}

/** A notice that is not conversation: a setting changed (mode, thinking, model) or the server restarted. */
export function isSettingNotice(item: ChatItem): boolean {
  return item.kind === "notice" && item.undoId === undefined && (SETTING_NOTICE.test(item.text) || (item.local === true && CONNECTION_NOTICES.has(item.text)));
}

/** The welcome view stays until the chat has something else than setting notices. */
export function showsWelcome(items: readonly ChatItem[]): boolean {
  return items.every(isSettingNotice);
}
