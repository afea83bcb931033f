// The questions the server asks (a plan, a tool confirmation, a checkpoint) as cards. Each is
// drawn by its `…Requested` event; the request that follows adopts that card (`open…Card`); the
// user's answer decides it (`decide…`), and a `…Decided` event decides a card nobody answered
// here and leaves an answered one as it is. Pure: no vscode import.
import type {
  ApprovePlanResult,
  CheckpointDecidedEvent,
  CheckpointRequestedEvent,
  CheckpointResult,
  ConfirmDecidedEvent,
  ConfirmRequestedEvent,
  ConfirmToolParams,
  ConfirmToolResult,
  PlanDecidedEvent,
  PlanRequestedEvent,
  TillerEvent,
} from "../protocol";
import {
  findTool,
  push,
  settleStreaming,
  updateTool,
  updateWhere,
  withItems,
  type ChatItem,
  type ChatModel,
  type CheckpointDecision,
  type ConfirmDecision,
  type Confirmation,
  type PlanDecision,
} from "./items";
import { summarizePreview } from "./words";

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

type QuestionEvent = PlanRequestedEvent | PlanDecidedEvent | ConfirmRequestedEvent | ConfirmDecidedEvent | CheckpointRequestedEvent | CheckpointDecidedEvent;

/** A question's events: `…Requested` draws its card, `…Decided` gives the server's word on it.
 *  `now` restarts a row's timer when a decided confirmation lets the call run. */
export function applyQuestionEvent(model: ChatModel, event: QuestionEvent, now?: number): ChatModel {
  const turnId = event.turnId ?? "";
  switch (event.type) {
    case "planRequested":
      return push(foldPlanText(settleStreaming(model), turnId, event.plan), (id) => ({ kind: "plan", id, turnId, plan: event.plan, decision: { state: "pending" } }));
    case "planDecided":
      return planDecided(model, turnId, event);
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
  }
}

/** The server's word on the plan: a card the user already answered here keeps that answer. */
function planDecided(model: ChatModel, turnId: string, event: PlanDecidedEvent): ChatModel {
  const plan = latestCard(model, "plan", turnId);
  const decision: PlanDecision = event.approved ? { state: "approved" } : { state: "rejected", feedback: event.feedback };
  if (plan !== undefined) {
    return undecided(plan.decision) ? updateWhere(model, (item) => item.id === plan.id, (item) => ({ ...item, decision }) as ChatItem) : model;
  }
  const text = event.approved ? "Plan approved." : `Plan rejected${event.feedback ? `: ${event.feedback}` : "."}`;
  return push(model, (id) => ({ kind: "notice", id, level: "info", text }));
}
