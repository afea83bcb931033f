// The chat as a value: reducers that turn tiller/event and tiller/state into the list of items
// the webview renders (`items.ts`). Pure: no vscode import, so it is unit-tested. `applyEvent` is
// the one renderer of the server's events, split by family: a turn's own events and a tool
// call's here, questions in `cards.ts`, subagents in `agents.ts`, notices in `notices.ts`. A
// transcript is the session's event log, and a redraw replays it through `applyEvent`, so a
// redrawn chat is the chat that was shown live.
import type {
  AgentStartedEvent,
  CommandEvent,
  HookActedEvent,
  NoticeEvent,
  QueueDroppedEvent,
  State,
  SteeredEvent,
  StepRestartedEvent,
  TextDeltaEvent,
  ThinkingDeltaEvent,
  TillerEvent,
  ToolFinishedEvent,
  ToolOutputEvent,
  ToolStartedEvent,
  ToolStatus,
  TurnEndedEvent,
  TurnError,
  TurnStartedEvent,
} from "../protocol";
import { applyChildEvent, outcomeOf, settled, startedAgent } from "./agents";
import { applyQuestionEvent } from "./cards";
import {
  closeConfirm,
  emptyChat,
  endOpenItems,
  findTool,
  push,
  settleStreaming,
  switchSession,
  updateTool,
  updateWhere,
  withItems,
  type ChatItem,
  type ChatModel,
  type Hint,
  type ProviderKind,
} from "./items";
import { addHandledPrompt, addNotice, CONNECTION_NOTICES, OLDER_NOT_SHOWN, pushNotice } from "./notices";
import { fileEffects, fileOf, hintFor, hookLine, plainWords, splitPromptNote, summarizeInput } from "./words";

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
  switch (event.type) {
    case "turnStarted":
    case "textDelta":
    case "thinkingDelta":
    case "stepRestarted":
    case "steered":
    case "turnEnded":
      return applyTurnEvent(model, event, now);
    case "toolStarted":
    case "toolOutput":
    case "toolFinished":
    case "agentStarted":
      return applyToolEvent(model, event, now);
    case "planRequested":
    case "planDecided":
    case "confirmRequested":
    case "confirmDecided":
    case "checkpointRequested":
    case "checkpointDecided":
      return applyQuestionEvent(model, event, now);
    case "notice":
    case "hookActed":
    case "queueDropped":
    case "command":
      return applyNoticeEvent(model, event);
    case "rewound":
      return rewound(model, event.turnId ?? "", event);
    case "rewindUndone":
      return rewindUndone(model, event);
    default:
      return model;
  }
}

type TurnEvent = TurnStartedEvent | TextDeltaEvent | ThinkingDeltaEvent | StepRestartedEvent | SteeredEvent | TurnEndedEvent;

/** A turn's own events: its prompt, the text and thinking it streams, a restarted step, a
 *  steering message that landed, and its end. */
function applyTurnEvent(model: ChatModel, event: TurnEvent, now?: number): ChatModel {
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
    case "stepRestarted":
      return pushNotice(discardStep(model, turnId), event.turnId, `The answer restarted (${event.reason}); its first attempt is not shown.`);
    case "steered":
      return pushNotice(settleStreaming(model), event.turnId, `Steered: ${event.text}`);
    case "turnEnded":
      return turnEnded(model, turnId, event, now);
  }
}

/** The turn ended: what still streams or waits is closed, and its end (outcome, trail, error
 *  with its hint, refusal, usage) is drawn. */
function turnEnded(model: ChatModel, turnId: string, event: TurnEndedEvent, now?: number): ChatModel {
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

function failure(error: TurnError): { error: TurnError; hint: Hint } {
  const { message, promptKept } = splitPromptNote(error.message);
  return { error: { ...error, message }, hint: hintFor(error.kind, promptKept) };
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

type ToolEvent = ToolStartedEvent | ToolOutputEvent | ToolFinishedEvent | AgentStartedEvent;

/** A tool call's row: started, its live output, its result, and the subagent a `task` started. */
function applyToolEvent(model: ChatModel, event: ToolEvent, now?: number): ChatModel {
  switch (event.type) {
    case "toolStarted":
      return toolStarted(model, event, now);
    case "toolOutput": {
      const tool = findTool(model, event.toolUseId);
      if (tool === undefined || tool.status !== "running") return model;
      return updateTool(model, event.toolUseId, (item) => ({ ...item, output: keepTail(item.output + event.text, LIVE_OUTPUT_CAP) }));
    }
    case "toolFinished":
      return toolFinished(model, event, now);
    case "agentStarted":
      return updateTool(model, event.toolUseId, (item) => ({ ...item, agent: startedAgent(event, now) }));
  }
}

/** A new running row; a confirmation drawn before it (an older server) becomes the row's. */
function toolStarted(model: ChatModel, event: ToolStartedEvent, now?: number): ChatModel {
  const turnId = event.turnId ?? "";
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

/** The call's result on its row (a row of its own when it was never drawn). */
function toolFinished(model: ChatModel, event: ToolFinishedEvent, now?: number): ChatModel {
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
      turnId: event.turnId ?? "",
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

/** Kept live output of one running command (the final result replaces it). */
export const LIVE_OUTPUT_CAP = 64 * 1024;

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

type NoticeLikeEvent = NoticeEvent | HookActedEvent | QueueDroppedEvent | CommandEvent;

/** Lines the turn's work does not draw itself: the server's notices, what hooks did, queued
 *  prompts that will not run, a slash command and its answer. */
function applyNoticeEvent(model: ChatModel, event: NoticeLikeEvent): ChatModel {
  switch (event.type) {
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
    case "command":
      return addHandledPrompt(settleStreaming(model), event.text, event.message);
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
