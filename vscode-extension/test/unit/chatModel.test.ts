import assert from "node:assert/strict";
import { test } from "node:test";
import { addConfirmCard, addPlanCard, decideConfirm, decidePlan } from "../../src/chat/cards";
import { emptyChat, type ChatModel } from "../../src/chat/items";
import { applyEvent, applyState, fromTranscript } from "../../src/chat/model";
import { applyConnection } from "../../src/chat/notices";
import { formatTrail, summarizeInput } from "../../src/chat/words";
import type { State, TillerEvent } from "../../src/protocol";
import { eventMaker, IDLE_STATE, only } from "./fixtures";

const ev = eventMaker();

function play(events: TillerEvent[], model: ChatModel = emptyChat()): ChatModel {
  return events.reduce(applyEvent, model);
}

function kinds(model: ChatModel): string[] {
  return model.items.map((item) => item.kind);
}

const state: State = IDLE_STATE;

test("text deltas of one turn stream into one assistant message", () => {
  const model = play([ev({ type: "turnStarted", prompt: "hi" }), ev({ type: "textDelta", text: "Hel" }), ev({ type: "textDelta", text: "lo" })]);
  assert.deepEqual(kinds(model), ["user", "assistant"]);
  const [assistant] = only(model, "assistant");
  assert.equal(assistant?.text, "Hello");
  assert.equal(assistant?.streaming, true);
});

test("a tool call splits the text and its result updates the log entry", () => {
  const model = play([
    ev({ type: "turnStarted", prompt: "run it" }),
    ev({ type: "textDelta", text: "Running." }),
    ev({ type: "toolStarted", toolUseId: "u1", name: "bash", input: { command: "ls -la" }, batch: 0, concurrent: false }),
    ev({ type: "toolFinished", toolUseId: "u1", name: "bash", status: "ok", output: "total 0", durationMs: 12 }),
    ev({ type: "textDelta", text: "Done." }),
    ev({ type: "turnEnded", outcome: "completed", trail: [{ name: "bash", status: "ok" }] }),
  ]);
  assert.deepEqual(kinds(model), ["user", "assistant", "tool", "assistant", "turnEnd"]);
  const [tool] = only(model, "tool");
  assert.equal(tool?.summary, "ls -la");
  assert.equal(tool?.status, "ok");
  assert.equal(tool?.output, "total 0");
  assert.ok(only(model, "assistant").every((item) => !item.streaming));
});

test("an interrupted turn marks running tools interrupted and dismisses pending cards", () => {
  let model = play([
    ev({ type: "turnStarted", prompt: "sleep" }),
    ev({ type: "toolStarted", toolUseId: "u1", name: "bash", input: { command: "sleep 30" }, batch: 0, concurrent: false }),
  ]);
  model = addConfirmCard(model, "confirm-1", { turnId: "t1", toolUseId: "u2", name: "bash", input: {}, preview: { kind: "command", command: "rm x", cwd: "/w" } });
  model = applyEvent(model, ev({ type: "turnEnded", outcome: "interrupted", trail: [{ name: "bash", status: "interrupted" }] }));
  assert.equal(only(model, "tool")[0]?.status, "interrupted");
  assert.equal(only(model, "confirm")[0]?.decision.state, "cancelled");
  assert.equal(only(model, "turnEnd")[0]?.outcome, "interrupted");
});

test("a failed turn carries its error kind and an actionable hint", () => {
  const model = play([
    ev({ type: "turnStarted", prompt: "hi" }),
    ev({ type: "turnEnded", outcome: "failed", error: { kind: "auth", message: "invalid x-api-key", retryable: false }, trail: [] }),
  ]);
  const [end] = only(model, "turnEnd");
  assert.equal(end?.error?.kind, "auth");
  assert.equal(end?.hint?.command?.id, "tiller.setApiKey");
});

test("a plan card keeps its decision in the history", () => {
  let model = play([ev({ type: "turnStarted", prompt: "plan it" })]);
  model = addPlanCard(model, "plan-1", "t1", "1. do it");
  assert.equal(only(model, "plan")[0]?.decision.state, "pending");
  model = decidePlan(model, "plan-1", { approved: true, mode: "default" });
  model = applyEvent(model, ev({ type: "planDecided", approved: true }));
  assert.deepEqual(only(model, "plan")[0]?.decision, { state: "approved" });
  // A second decision (a late click) changes nothing.
  model = decidePlan(model, "plan-1", { approved: false, feedback: "no" });
  assert.deepEqual(only(model, "plan")[0]?.decision, { state: "approved" });
});

test("planDecided without a card (e.g. another client answered) is shown as a notice", () => {
  const model = play([ev({ type: "turnStarted", prompt: "x" }), ev({ type: "planDecided", approved: false, feedback: "too big" })]);
  assert.equal(only(model, "notice")[0]?.text, "Plan rejected: too big");
});

test("a confirm decision records deny feedback", () => {
  let model = addConfirmCard(emptyChat(), "confirm-1", { turnId: "t1", toolUseId: "u1", name: "write_file", input: {}, preview: { kind: "diff", path: "a.txt", before: "", after: "x" } });
  model = decideConfirm(model, "confirm-1", { state: "deny", feedback: "not that file" });
  assert.deepEqual(only(model, "confirm")[0]?.decision, { state: "deny", feedback: "not that file" });
});

test("a new session id starts a new chat; the first state keeps what is shown", () => {
  let model = applyState(emptyChat(), state);
  model = play([ev({ type: "turnStarted", prompt: "hi" })], model);
  model = applyState(model, { ...state, busy: true });
  assert.equal(model.items.length, 1);
  model = applyState(model, { ...state, sessionId: "s2" });
  assert.equal(model.items.length, 0);
  assert.equal(model.sessionId, "s2");
});

test("losing the server ends streaming and says so", () => {
  let model = applyState(emptyChat(), state);
  model = play([ev({ type: "turnStarted", prompt: "hi" }), ev({ type: "textDelta", text: "partial" })], model);
  model = applyConnection(model, "starting");
  assert.equal(only(model, "assistant")[0]?.streaming, false);
  assert.match(only(model, "notice")[0]?.text ?? "", /restarting/);
});

test("a transcript (the server's entries) redraws the chat", () => {
  const model = fromTranscript("s9", [
    { seq: 1, turnId: "t1", kind: "turnStarted", prompt: "hello" },
    { seq: 2, turnId: "t1", kind: "assistantText", text: "Reading it." },
    { seq: 3, turnId: "t1", kind: "toolStarted", toolUseId: "u1", name: "read_file", input: { path: "a.py" }, batch: 0, concurrent: false },
    { seq: 4, turnId: "t1", kind: "toolFinished", toolUseId: "u1", name: "read_file", status: "ok", output: "1 x", durationMs: 1 },
    { seq: 5, turnId: "t1", kind: "assistantText", text: "Done." },
    { seq: 6, turnId: "t1", kind: "planDecided", approved: false, feedback: "smaller" },
    { seq: 7, turnId: "t1", kind: "turnEnded", outcome: "completed", trail: [] },
    { seq: 8, turnId: null, kind: "notice", text: "outside a turn" },
    { seq: 9, turnId: "t1", kind: "someFutureKind", text: "skipped" },
    42,
  ]);
  assert.equal(model.sessionId, "s9");
  assert.deepEqual(kinds(model), ["user", "assistant", "tool", "assistant", "notice", "turnEnd", "notice"]);
  assert.deepEqual(
    only(model, "assistant").map((item) => [item.text, item.streaming]),
    [
      ["Reading it.", false],
      ["Done.", false],
    ],
  );
  assert.equal(only(model, "tool")[0]?.status, "ok");
});

test("a paged transcript says that older entries are not shown", () => {
  const model = fromTranscript("s9", [{ seq: 9, turnId: "t5", kind: "turnStarted", prompt: "late" }], true);
  assert.match(only(model, "notice")[0]?.text ?? "", /Older messages/);
});

test("trails and tool summaries read like the design says", () => {
  assert.equal(
    formatTrail([
      { name: "read_file", status: "ok" },
      { name: "edit_file", status: "ok" },
      { name: "bash", status: "error" },
    ]),
    "read_file ✓ → edit_file ✓ → bash ✗",
  );
  assert.equal(summarizeInput("write_file", { path: "src/a.ts", content: "..." }), "src/a.ts");
  assert.equal(summarizeInput("todo_write", { todos: [{}, {}] }), "2 items");
  assert.equal(summarizeInput("todo_write", { todos: [{}] }), "1 item");
  assert.equal(summarizeInput("enter_plan_mode", {}), "");
});

test("hookActed shows which hook did what in the log", () => {
  const model = play([
    ev({ type: "turnStarted", prompt: "x" }),
    ev({ type: "hookActed", event: "PreToolUse", hooks: "hook: ./guard.py", outcome: "denied", message: "no rm here", toolUseId: "b1" }),
    ev({ type: "hookActed", event: "Stop", hooks: "hook: ./stop.py", outcome: "message", message: "hook: ./stop.py timed out after 60 s" }),
  ]);
  assert.deepEqual(
    only(model, "notice").map((n) => n.text),
    ["PreToolUse hook: ./guard.py denied the call: no rm here", "Stop: hook: ./stop.py timed out after 60 s"],
  );
});
