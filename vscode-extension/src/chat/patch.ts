// The chat travels to the webview as patches: what changed since the last one, never the
// whole model each tick. Pure (no vscode import, no DOM), shared by both bundles and unit-tested.
// The chat's reducers (model.ts, cards.ts, notices.ts) keep every item they do not change (same
// object), so "changed" is an identity test on the extension's side: no serialization, no deep
// comparison.
import type { ChatItem, ChatModel } from "./items";

/** What the webview renders besides the items. */
export type ChatHead = Pick<ChatModel, "sessionId" | "state" | "connection" | "provider">;

/** The webview's copy of the chat: the head and the items, in order. */
export type ChatView = ChatHead & { items: ChatItem[] };

export interface ChatPatch {
  /** The webview drops what it has first: this patch carries the whole chat. */
  reset: boolean;
  /** The head, when any of it changed. */
  head?: ChatHead;
  /** Items that are new or changed since the last patch. */
  items: ChatItem[];
  /** Every item's id in order, when items were added, removed or moved. */
  order?: string[];
}

const EMPTY_HEAD: ChatHead = { sessionId: null, state: null, connection: "starting", provider: null };

export function headOf(model: ChatHead): ChatHead {
  return { sessionId: model.sessionId, state: model.state, connection: model.connection, provider: model.provider };
}

function sameHead(a: ChatHead, b: ChatHead): boolean {
  return a.sessionId === b.sessionId && a.state === b.state && a.connection === b.connection && a.provider === b.provider;
}

function sameOrder(items: ChatItem[], ids: string[]): boolean {
  return items.length === ids.length && items.every((item, index) => item.id === ids[index]);
}

/** The extension's side: remembers what the webview was sent and makes the next patch. */
export class ChatSync {
  private head: ChatHead | undefined;
  private sent = new Map<string, ChatItem>();
  private order: string[] = [];

  /** The next patch is a whole chat (the webview was (re)loaded, or a message was lost). */
  reset(): void {
    this.head = undefined;
    this.sent = new Map();
    this.order = [];
  }

  /** What changed since the last patch; undefined when nothing did. */
  next(model: ChatModel): ChatPatch | undefined {
    const reset = this.head === undefined;
    const head = headOf(model);
    const headChanged = this.head === undefined || !sameHead(this.head, head);
    const items = model.items.filter((item) => this.sent.get(item.id) !== item);
    const orderChanged = !sameOrder(model.items, this.order);
    if (!reset && !headChanged && items.length === 0 && !orderChanged) {
      return undefined;
    }
    this.head = head;
    this.sent = new Map(model.items.map((item) => [item.id, item]));
    if (orderChanged) {
      this.order = model.items.map((item) => item.id);
    }
    return {
      reset,
      ...(headChanged ? { head } : {}),
      items,
      ...(orderChanged ? { order: this.order } : {}),
    };
  }
}

/**
 * The webview's side: the chat after a patch. Items the patch does not name stay the same
 * objects, so the renderer redraws only what changed.
 */
export function applyPatch(view: ChatView | null, patch: ChatPatch): ChatView {
  const base: ChatView = patch.reset || view === null ? { ...EMPTY_HEAD, items: [] } : view;
  const byId = new Map(base.items.map((item) => [item.id, item]));
  for (const item of patch.items) {
    byId.set(item.id, item);
  }
  const order = patch.order ?? base.items.map((item) => item.id);
  const items = order.flatMap((id) => {
    const item = byId.get(id);
    return item !== undefined ? [item] : [];
  });
  return { ...(patch.head ?? headOf(base)), items };
}
