// The chat's items, and the small operations on them that every reducer shares. Pure: no
// vscode import, no DOM (the webview bundle uses the types too).
import type {
  AttachmentSummary,
  DiffStat,
  InterruptCause,
  Outcome,
  Refusal,
  State,
  ToolDecision,
  ToolStatus,
  TrailItem,
  TurnError,
  Usage,
} from "../protocol";
import { type AgentView, outcomeOf, settled } from "./agents";

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

/** The model with `items`, `used` more ids taken. */
export function withItems(model: ChatModel, items: ChatItem[], used = 0): ChatModel {
  return { ...model, items, nextId: model.nextId + used };
}

/** Appends the item `make` builds with the next id. */
export function push(model: ChatModel, make: (id: string) => ChatItem): ChatModel {
  return withItems(model, [...model.items, make(`i${model.nextId}`)], 1);
}

/** Replaces each item `match` picks with `update`'s. */
export function updateWhere(model: ChatModel, match: (item: ChatItem) => boolean, update: (item: ChatItem) => ChatItem): ChatModel {
  return withItems(model, model.items.map((item) => (match(item) ? update(item) : item)));
}

/** The model of session `sessionId`: another session's items go (a first session keeps what
 *  the chat showed before it was known). */
export function switchSession(model: ChatModel, sessionId: string): ChatModel {
  if (model.sessionId === sessionId) {
    return model;
  }
  const items = model.sessionId === null ? model.items : [];
  return { ...model, sessionId, items };
}

/** A confirmation still pending, dismissed (its question was withdrawn). */
export function closeConfirm(confirm: Confirmation | undefined): Confirmation | undefined {
  return confirm !== undefined && confirm.decision.state === "pending" ? { ...confirm, decision: { state: "cancelled" } } : confirm;
}

/** Stops streaming and dismisses pending cards, for one turn or (turnId null) for all. */
export function endOpenItems(model: ChatModel, turnId: string | null, toolStatus: ToolStatus = "interrupted", now?: number): ChatModel {
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
export function settleStreaming(model: ChatModel): ChatModel {
  if (!model.items.some((item) => (item.kind === "assistant" || item.kind === "thinking") && item.streaming)) {
    return model;
  }
  return updateWhere(
    model,
    (item) => (item.kind === "assistant" || item.kind === "thinking") && item.streaming,
    (item) => ({ ...item, streaming: false }) as ChatItem,
  );
}

/** The row of tool call `toolUseId`. */
export function findTool(model: ChatModel, toolUseId: string): Extract<ChatItem, { kind: "tool" }> | undefined {
  return model.items.find((item): item is Extract<ChatItem, { kind: "tool" }> => item.kind === "tool" && item.toolUseId === toolUseId);
}

/** Replaces the row of tool call `toolUseId` with `update`'s. */
export function updateTool(
  model: ChatModel,
  toolUseId: string,
  update: (item: Extract<ChatItem, { kind: "tool" }>) => Extract<ChatItem, { kind: "tool" }>,
): ChatModel {
  return updateWhere(model, (item) => item.kind === "tool" && item.toolUseId === toolUseId, (item) => update(item as Extract<ChatItem, { kind: "tool" }>));
}
