// The chat as a value: reducers that turn tiller/event, tiller/state and approval requests into
// a list of items the webview renders. Pure: no vscode import, so it is unit-tested.
import type {
  ApprovePlanResult,
  ConfirmToolParams,
  ErrorKind,
  Outcome,
  Preview,
  State,
  TillerEvent,
  ToolDecision,
  ToolStatus,
  TrailItem,
  TurnError,
} from "../protocol";

/** Commands a chat item may offer as a button (the provider runs only these). */
export type ChatCommand = "tiller.setApiKey" | "tiller.showLogs" | "tiller.newSession" | "tiller.openSettings";

export interface Hint {
  text: string;
  command?: { id: ChatCommand; label: string };
}

export type PlanDecision =
  | { state: "pending" }
  | { state: "approved"; mode?: "acceptEdits" | "default" }
  | { state: "rejected"; feedback?: string }
  | { state: "cancelled" };

export type ConfirmDecision =
  | { state: "pending" }
  | { state: ToolDecision; feedback?: string }
  | { state: "cancelled" };

export type CheckpointDecision = { state: "pending" | "continue" | "stop" | "cancelled" };

export type ChatItem =
  | { kind: "user"; id: string; text: string }
  | { kind: "assistant"; id: string; turnId: string; text: string; streaming: boolean }
  | { kind: "thinking"; id: string; turnId: string; text: string; streaming: boolean }
  | {
      kind: "tool";
      id: string;
      turnId: string;
      toolUseId: string;
      name: string;
      summary: string;
      status: "running" | ToolStatus;
      output: string;
      durationMs?: number;
    }
  | { kind: "notice"; id: string; text: string; level: "info" | "error" }
  | { kind: "plan"; id: string; turnId: string; plan: string; decision: PlanDecision }
  | {
      kind: "confirm";
      id: string;
      turnId: string;
      name: string;
      preview: Preview;
      decision: ConfirmDecision;
    }
  | {
      kind: "checkpoint";
      id: string;
      turnId: string;
      toolsUsed: number;
      trail: TrailItem[];
      decision: CheckpointDecision;
    }
  | {
      kind: "turnEnd";
      id: string;
      turnId: string;
      outcome: Outcome;
      trail: TrailItem[];
      error?: TurnError;
      hint?: Hint;
    };

export type ChatConnection = "starting" | "running" | "stopped";

export interface ChatModel {
  sessionId: string | null;
  state: State | null;
  connection: ChatConnection;
  items: ChatItem[];
  nextId: number;
}

export function emptyChat(): ChatModel {
  return { sessionId: null, state: null, connection: "starting", items: [], nextId: 1 };
}

const ERROR_HINTS: Record<ErrorKind, Hint> = {
  auth: {
    text: "The API rejected the credentials.",
    command: { id: "tiller.setApiKey", label: "Set API Key…" },
  },
  rate_limit: { text: "Rate limited by the API. Wait a moment, then say “continue”." },
  overloaded: { text: "The API is overloaded. Try again shortly: say “continue”." },
  server: { text: "The API had a server error. Say “continue” to retry." },
  connection: {
    text: "Could not reach the API. Check the network or the tiller.baseUrl setting, then say “continue”.",
    command: { id: "tiller.openSettings", label: "Open Settings" },
  },
  timeout: { text: "The request timed out. Say “continue” to retry." },
  context_too_long: {
    text: "The conversation no longer fits the model's context. Type /compact or start a new session.",
    command: { id: "tiller.newSession", label: "New Session" },
  },
  invalid_request: {
    text: "The API refused the request.",
    command: { id: "tiller.showLogs", label: "Show Logs" },
  },
  internal: {
    text: "The Tiller server hit an internal error.",
    command: { id: "tiller.showLogs", label: "Show Logs" },
  },
};

export function hintFor(kind: ErrorKind): Hint {
  return ERROR_HINTS[kind] ?? ERROR_HINTS.internal;
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

export function toolMark(status: "running" | ToolStatus): string {
  return status === "running" ? "…" : TRAIL_MARKS[status];
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
    return `${fields.todos.length} item(s)`;
  }
  const json = JSON.stringify(input);
  return json === "{}" ? "" : json.length > 120 ? `${json.slice(0, 119)}…` : json;
}

function withItems(model: ChatModel, items: ChatItem[], used = 0): ChatModel {
  return { ...model, items, nextId: model.nextId + used };
}

function push(model: ChatModel, make: (id: string) => ChatItem): ChatModel {
  return withItems(model, [...model.items, make(`i${model.nextId}`)], 1);
}

function updateWhere(
  model: ChatModel,
  match: (item: ChatItem) => boolean,
  update: (item: ChatItem) => ChatItem,
): ChatModel {
  return withItems(model, model.items.map((item) => (match(item) ? update(item) : item)));
}

function switchSession(model: ChatModel, sessionId: string): ChatModel {
  if (model.sessionId === sessionId) {
    return model;
  }
  const items = model.sessionId === null ? model.items : [];
  return { ...model, sessionId, items };
}

/** A new State: the session may have changed (new/resume/fork), which starts a new chat. */
export function applyState(model: ChatModel, state: State): ChatModel {
  return { ...switchSession(model, state.sessionId), state, connection: "running" };
}

export function applyConnection(model: ChatModel, connection: ChatConnection): ChatModel {
  if (connection === model.connection) {
    return model;
  }
  let next: ChatModel = { ...model, connection };
  if (model.connection === "running" && connection !== "running") {
    next = endOpenItems(next, null);
    next = push(next, (id) => ({
      kind: "notice",
      id,
      level: "error",
      text: connection === "starting" ? "The Tiller server stopped; restarting it…" : "The Tiller server is not running.",
    }));
  }
  return next;
}

/** Stops streaming and dismisses pending cards, for one turn or (turnId null) for all. */
function endOpenItems(model: ChatModel, turnId: string | null, toolStatus: ToolStatus = "interrupted"): ChatModel {
  const inTurn = (item: ChatItem): boolean => turnId === null || ("turnId" in item && item.turnId === turnId);
  return updateWhere(model, inTurn, (item) => {
    switch (item.kind) {
      case "assistant":
      case "thinking":
        return item.streaming ? { ...item, streaming: false } : item;
      case "tool":
        return item.status === "running" ? { ...item, status: toolStatus } : item;
      case "plan":
      case "confirm":
      case "checkpoint":
        return item.decision.state === "pending" ? { ...item, decision: { state: "cancelled" } } : item;
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
    (item) => item.kind === "assistant" || item.kind === "thinking",
    (item) => ({ ...item, streaming: false }) as ChatItem,
  );
}

function appendStreamed(model: ChatModel, kind: "assistant" | "thinking", turnId: string, text: string): ChatModel {
  const last = model.items.at(-1);
  if (last !== undefined && last.kind === kind && last.turnId === turnId && last.streaming) {
    return withItems(model, [...model.items.slice(0, -1), { ...last, text: last.text + text }]);
  }
  return push(settleStreaming(model), (id) => ({ kind, id, turnId, text, streaming: true }));
}

/** Applies one `tiller/event` notification. */
export function applyEvent(current: ChatModel, event: TillerEvent): ChatModel {
  const model = switchSession(current, event.sessionId);
  const turnId = event.turnId;
  switch (event.type) {
    case "turnStarted":
      return push(model, (id) => ({ kind: "user", id, text: event.prompt }));
    case "textDelta":
      return appendStreamed(model, "assistant", turnId, event.text);
    case "thinkingDelta":
      return appendStreamed(model, "thinking", turnId, event.text);
    case "toolStarted": {
      return push(settleStreaming(model), (id) => ({
        kind: "tool",
        id,
        turnId,
        toolUseId: event.toolUseId,
        name: event.name,
        summary: summarizeInput(event.name, event.input),
        status: "running",
        output: "",
      }));
    }
    case "toolFinished": {
      const known = model.items.some((item) => item.kind === "tool" && item.toolUseId === event.toolUseId);
      if (!known) {
        return push(model, (id) => ({
          kind: "tool",
          id,
          turnId,
          toolUseId: event.toolUseId,
          name: event.name,
          summary: "",
          status: event.status,
          output: event.output,
          durationMs: event.durationMs,
        }));
      }
      return updateWhere(
        model,
        (item) => item.kind === "tool" && item.toolUseId === event.toolUseId,
        (item) => ({ ...item, status: event.status, output: event.output, durationMs: event.durationMs }) as ChatItem,
      );
    }
    case "notice":
      return push(model, (id) => ({ kind: "notice", id, level: "info", text: event.text }));
    case "planDecided": {
      const plan = [...model.items].reverse().find((item) => item.kind === "plan" && item.turnId === turnId);
      if (plan !== undefined && plan.kind === "plan") {
        if (plan.decision.state !== "pending" && plan.decision.state !== "cancelled") {
          return model;
        }
        const decision: PlanDecision = event.approved
          ? { state: "approved" }
          : { state: "rejected", feedback: event.feedback };
        return updateWhere(model, (item) => item.id === plan.id, (item) => ({ ...item, decision }) as ChatItem);
      }
      const text = event.approved ? "Plan approved." : `Plan rejected${event.feedback ? `: ${event.feedback}` : "."}`;
      return push(model, (id) => ({ kind: "notice", id, level: "info", text }));
    }
    case "turnEnded": {
      const ended = endOpenItems(model, turnId, event.outcome === "interrupted" ? "interrupted" : "error");
      return push(ended, (id) => ({
        kind: "turnEnd",
        id,
        turnId,
        outcome: event.outcome,
        trail: event.trail ?? [],
        error: event.error,
        hint: event.error !== undefined ? hintFor(event.error.kind) : undefined,
      }));
    }
    default:
      return model;
  }
}

export function addNotice(model: ChatModel, text: string, level: "info" | "error" = "info"): ChatModel {
  return push(model, (id) => ({ kind: "notice", id, level, text }));
}

/** A prompt the server handled itself (slash command): show it with the server's answer. */
export function addHandledPrompt(model: ChatModel, prompt: string, message: string | undefined): ChatModel {
  const withPrompt = push(model, (id) => ({ kind: "user", id, text: prompt }));
  return message !== undefined && message !== "" ? addNotice(withPrompt, message) : withPrompt;
}

export function addPlanCard(model: ChatModel, id: string, turnId: string, plan: string): ChatModel {
  const settled = settleStreaming(model);
  return withItems(settled, [...settled.items, { kind: "plan", id, turnId, plan, decision: { state: "pending" } }]);
}

export function decidePlan(model: ChatModel, id: string, result: ApprovePlanResult | null): ChatModel {
  const decision: PlanDecision =
    result === null
      ? { state: "cancelled" }
      : result.approved
        ? { state: "approved", mode: result.mode }
        : { state: "rejected", feedback: result.feedback };
  return updateWhere(
    model,
    (item) => item.id === id && item.kind === "plan" && item.decision.state === "pending",
    (item) => ({ ...item, decision }) as ChatItem,
  );
}

export function addConfirmCard(model: ChatModel, id: string, params: ConfirmToolParams): ChatModel {
  const settled = settleStreaming(model);
  return withItems(settled, [
    ...settled.items,
    {
      kind: "confirm",
      id,
      turnId: params.turnId,
      name: params.name,
      preview: params.preview,
      decision: { state: "pending" },
    },
  ]);
}

export function decideConfirm(model: ChatModel, id: string, decision: ConfirmDecision): ChatModel {
  return updateWhere(
    model,
    (item) => item.id === id && item.kind === "confirm" && item.decision.state === "pending",
    (item) => ({ ...item, decision }) as ChatItem,
  );
}

export function addCheckpointCard(
  model: ChatModel,
  id: string,
  turnId: string,
  toolsUsed: number,
  trail: TrailItem[],
): ChatModel {
  return withItems(model, [
    ...model.items,
    { kind: "checkpoint", id, turnId, toolsUsed, trail, decision: { state: "pending" } },
  ]);
}

export function decideCheckpoint(model: ChatModel, id: string, decision: CheckpointDecision): ChatModel {
  return updateWhere(
    model,
    (item) => item.id === id && item.kind === "checkpoint" && item.decision.state === "pending",
    (item) => ({ ...item, decision }) as ChatItem,
  );
}

/**
 * Redraws a chat from `tiller/session/transcript` entries: `{seq, turnId, kind, ...}` where
 * `kind` is a `tiller/event` type (replayed through `applyEvent`) or `assistantText`.
 * Entries of any other shape are skipped. `more` says older entries were left out.
 */
export function fromTranscript(sessionId: string, entries: unknown[], more = false): ChatModel {
  let model: ChatModel = { ...emptyChat(), sessionId, connection: "running" };
  if (more) {
    model = addNotice(model, "Older messages of this session are not shown.");
  }
  for (const entry of entries) {
    if (typeof entry !== "object" || entry === null) {
      continue;
    }
    const { kind, turnId, ...fields } = entry as Record<string, unknown>;
    if (typeof kind !== "string" || typeof turnId !== "string") {
      continue;
    }
    if (kind === "assistantText") {
      const text = typeof fields.text === "string" ? fields.text : "";
      model = push(settleStreaming(model), (id) => ({ kind: "assistant", id, turnId, text, streaming: false }));
    } else {
      model = applyEvent(model, { ...fields, type: kind, sessionId, turnId, seq: 0 } as unknown as TillerEvent);
    }
  }
  return endOpenItems(model, null);
}
