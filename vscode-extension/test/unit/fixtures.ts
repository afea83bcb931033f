// What the chat model's unit tests share: events with a running seq, an idle state, a filter.
import type { ChatItem, ChatModel } from "../../src/chat/items";
import type { State, TillerEvent } from "../../src/protocol";

export type EventBody = TillerEvent extends infer E ? (E extends TillerEvent ? Omit<E, "sessionId" | "turnId" | "seq"> : never) : never;

/** A `tiller/event` maker: each event gets the next `seq` (one sequence per maker). */
export function eventMaker(): (body: EventBody, turnId?: string | null, sessionId?: string) => TillerEvent {
  let seq = 0;
  return (body, turnId = "t1", sessionId = "s1") => {
    seq += 1;
    return { sessionId, turnId, seq, ...body } as TillerEvent;
  };
}

export function only<K extends ChatItem["kind"]>(model: ChatModel, kind: K): Extract<ChatItem, { kind: K }>[] {
  return model.items.filter((item): item is Extract<ChatItem, { kind: K }> => item.kind === kind);
}

export const IDLE_STATE: State = {
  sessionId: "s1",
  mode: "default",
  model: "m",
  thinking: { enabled: false, budgetTokens: 0 },
  busy: false,
  turnId: null,
  queue: [],
  activeTodo: null,
  todoCounts: { completed: 0, total: 0 },
  toolsUsed: 0,
};
