// What the chat says: texts made from the server's values (modes, hints, durations, tokens,
// tool inputs, previews, hooks, file effects). Pure: no vscode import, no DOM.
import type { DiffStat, ErrorKind, HookOutcome, Mode, State, Thinking, ToolStatus, TrailItem } from "../protocol";
import type { CommandSegment, Hint, PreviewSummary, ToolRowStatus } from "./items";

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
