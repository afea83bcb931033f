// The webview is sent what changed in the chat, not the whole model each tick, and the chat it
// rebuilds from the patches is the extension's chat.
import assert from "node:assert/strict";
import { test } from "node:test";
import { addConfirmCard, decideConfirm } from "../../src/chat/cards";
import { emptyChat, type ChatModel } from "../../src/chat/items";
import { applyEvent, applyState, fromTranscript } from "../../src/chat/model";
import { addNotice, applyConnection } from "../../src/chat/notices";
import { applyPatch, ChatSync, headOf, type ChatPatch, type ChatView } from "../../src/chat/patch";
import type { State } from "../../src/protocol";
import { eventMaker, IDLE_STATE } from "./fixtures";

const ev = eventMaker();

const state: State = IDLE_STATE;

/** What the webview holds of a model. */
function viewOf(model: ChatModel): ChatView {
  return { ...headOf(model), items: model.items };
}

/** A patch as the webview receives it: copied, like postMessage does. */
function delivered(patch: ChatPatch): ChatPatch {
  return structuredClone(patch);
}

test("a streamed delta sends only the item it grew, without the head or the order", () => {
  const sync = new ChatSync();
  let model = applyEvent(applyState(emptyChat(), state), ev({ type: "turnStarted", prompt: "hello" }));
  model = applyEvent(model, ev({ type: "textDelta", text: "Hel" }));
  const first = sync.next(model);
  assert.ok(first !== undefined);
  assert.equal(first.reset, true);
  assert.equal(first.items.length, 2);
  assert.ok(first.head !== undefined && first.order !== undefined);

  model = applyEvent(model, ev({ type: "textDelta", text: "lo" }));
  const delta = sync.next(model);
  assert.deepEqual(delta, { reset: false, items: [model.items[1]] });
});

test("nothing changed: no patch", () => {
  const sync = new ChatSync();
  const model = applyEvent(applyState(emptyChat(), state), ev({ type: "turnStarted", prompt: "hello" }));
  assert.ok(sync.next(model) !== undefined);
  assert.equal(sync.next(model), undefined);
  assert.equal(sync.next({ ...model }), undefined, "a new model object with the same parts is no change");
});

test("a state change sends the head alone", () => {
  const sync = new ChatSync();
  const model = applyEvent(applyState(emptyChat(), state), ev({ type: "turnStarted", prompt: "hello" }));
  sync.next(model);
  const busy = applyState(model, { ...state, busy: true, turnId: "t1" });
  assert.deepEqual(sync.next(busy), { reset: false, head: headOf(busy), items: [] });
});

test("after reset (a reloaded webview) the next patch is the whole chat", () => {
  const sync = new ChatSync();
  const model = applyEvent(applyState(emptyChat(), state), ev({ type: "turnStarted", prompt: "hello" }));
  sync.next(model);
  sync.reset();
  const whole = sync.next(model);
  assert.ok(whole !== undefined);
  assert.equal(whole.reset, true);
  assert.deepEqual(applyPatch({ ...headOf(emptyChat()), items: [] }, delivered(whole)), viewOf(model));
});

test("the chat rebuilt from the patches is the extension's chat at every step", () => {
  const sync = new ChatSync();
  let view: ChatView | null = null;
  let model = emptyChat();
  const steps: Array<(m: ChatModel) => ChatModel> = [
    (m) => applyState(m, state),
    (m) => applyEvent(m, ev({ type: "turnStarted", prompt: "fix it" })),
    (m) => applyEvent(m, ev({ type: "thinkingDelta", text: "hmm" })),
    (m) => applyEvent(m, ev({ type: "textDelta", text: "Looking" })),
    (m) => applyEvent(m, ev({ type: "toolStarted", toolUseId: "u1", name: "bash", input: { command: "make" }, batch: 0, concurrent: false }), 10),
    (m) => addConfirmCard(m, "confirm-1", { turnId: "t1", toolUseId: "u1", name: "bash", input: { command: "make" }, preview: { kind: "command", command: "make", cwd: "/w" } }),
    (m) => decideConfirm(m, "confirm-1", { state: "allow" }, 20),
    (m) => applyEvent(m, ev({ type: "toolOutput", toolUseId: "u1", text: "building\n" })),
    (m) => applyEvent(m, ev({ type: "toolFinished", toolUseId: "u1", name: "bash", status: "ok", output: "built\n", durationMs: 5 })),
    (m) => applyEvent(m, ev({ type: "textDelta", text: "Partial" })),
    // Removes the partial text: the order changes, nothing is added.
    (m) => applyEvent(m, ev({ type: "stepRestarted", reason: "overloaded" })),
    (m) => applyEvent(m, ev({ type: "turnEnded", outcome: "completed", trail: [] })),
    (m) => applyConnection(m, "starting", "restart"),
    // The redraw after the restart: new items whose ids the old chat used too.
    (m) => applyState(fromTranscript("s1", [{ seq: 1, turnId: "t1", kind: "turnStarted", prompt: "fix it" }], false, m.items.slice(-1)), state),
    (m) => addNotice(m, "hello"),
    // Another session: a new, empty chat.
    (m) => applyState(m, { ...state, sessionId: "s2" }),
    (m) => applyEvent(m, ev({ type: "turnStarted", prompt: "next" }, "t9", "s2")),
  ];
  for (const [index, change] of steps.entries()) {
    model = change(model);
    const patch = sync.next(model);
    if (patch !== undefined) {
      view = applyPatch(view, delivered(patch));
    }
    assert.deepEqual(view, viewOf(model), `after step ${index}`);
  }
});

test("items a patch does not name stay the same objects in the webview", () => {
  const sync = new ChatSync();
  let model = applyEvent(applyState(emptyChat(), state), ev({ type: "turnStarted", prompt: "hello" }));
  model = applyEvent(model, ev({ type: "textDelta", text: "a" }));
  const view = applyPatch(null, delivered(sync.next(model)!));
  model = applyEvent(model, ev({ type: "textDelta", text: "b" }));
  const next = applyPatch(view, delivered(sync.next(model)!));
  assert.equal(next.items[0], view.items[0], "the prompt is not redrawn");
  assert.notEqual(next.items[1], view.items[1]);
  assert.equal(next.items[1]?.kind === "assistant" && next.items[1].text, "ab");
});
