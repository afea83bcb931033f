// The chat's notices: the server's (a retry shown once per kind and turn), the chat's own word
// on the connection (stopped, restarting, restarted: kept by a redraw after a restart), and
// which notices are not conversation (a setting changed). Pure: no vscode import.
import { endOpenItems, push, withItems, type ChatConnection, type ChatItem, type ChatModel } from "./items";
import { plainWords } from "./words";

/** Notices that answer a setting change (mode, thinking, model), and the server's word that the
 *  folder is not trusted when a session opens: not a conversation yet. */
const SETTING_NOTICE = /^(Mode: (ask before edits|accept edits|plan|default|acceptEdits)|Thinking: |Model: |Model switches to |This folder is not trusted \()/;

/** Why the connection left "running": a deliberate restart or the server going away. */
export type StopReason = "restart" | "crash" | "stopped";

const STOP_NOTICES: Record<StopReason, string> = {
  restart: "Restarting the Tiller server…",
  crash: "The Tiller server stopped; restarting it…",
  stopped: "The Tiller server is not running.",
};

export const OLDER_NOT_SHOWN = "Older messages of this session are not shown.";

/** Follows a stop notice once a new server is up, so the chat does not end on "stopped". */
export const RESTARTED_NOTICE = "The Tiller server restarted.";

export const CONNECTION_NOTICES: ReadonlySet<string> = new Set([...Object.values(STOP_NOTICES), RESTARTED_NOTICE]);

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

/** Text of a notice without its numbers ("retrying in 0.4 s", "(2/3)"): notices of one retry
 *  kind have the same; undefined for a notice that is not about a retry. */
export function retryKind(text: string): string | undefined {
  return /\bretrying\b|^The answer restarted\b/.test(text) ? text.replace(/\d+(?:\.\d+)?/g, "#") : undefined;
}

/**
 * A server notice. A retry notice is shown once per kind and turn: a repeat replaces the one
 * shown before (at the end, where the user looks) and counts it, instead of stacking lines.
 */
export function pushNotice(model: ChatModel, turnId: string | null, text: string): ChatModel {
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

export function addNotice(model: ChatModel, text: string, level: "info" | "error" = "info", local = true): ChatModel {
  return push(model, (id) => ({ kind: "notice", id, level, text: plainWords(text), local }));
}

/** `addNotice`, unless the chat already ends on that very notice. */
export function addNoticeOnce(model: ChatModel, text: string, level: "info" | "error" = "info"): ChatModel {
  const words = plainWords(text);
  const last = model.items.at(-1);
  return last !== undefined && last.kind === "notice" && last.text === words && last.level === level ? model : addNotice(model, text, level);
}

/** A prompt the server handled itself (slash command): show it with the server's answer. */
export function addHandledPrompt(model: ChatModel, prompt: string, message: string | undefined): ChatModel {
  const withPrompt = push(model, (id) => ({ kind: "user", id, text: prompt, local: true }));
  return message !== undefined && message !== "" ? addNotice(withPrompt, message) : withPrompt;
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
