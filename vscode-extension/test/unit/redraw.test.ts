// The chat drawn live (events + the cards the user answered) equals the chat redrawn from the
// server's transcript; and the v2 events (live output, diffs, step restarts, crash-cut turns).
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  addCheckpointCard,
  addConfirmCard,
  addPlanCard,
  applyConnection,
  applyEvent,
  applyState,
  decideCheckpoint,
  decideConfirm,
  decidePlan,
  emptyChat,
  fromTranscript,
  plainWords,
  trailingConnectionNotices,
  usageText,
  type ChatItem,
  type ChatModel,
} from "../../src/chat/model";
import type { State, TillerEvent } from "../../src/protocol";

type EventBody = TillerEvent extends infer E ? (E extends TillerEvent ? Omit<E, "sessionId" | "turnId" | "seq"> : never) : never;

let seq = 0;
function ev(body: EventBody, turnId: string | null = "t1", sessionId = "s1"): TillerEvent {
  seq += 1;
  return { sessionId, turnId, seq, ...body } as TillerEvent;
}

/** What the webview draws of an item: everything but ids and live-only timing. */
function view(model: ChatModel): unknown[] {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (typeof value !== "object" || value === null) return value;
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => key !== "id" && key !== "startedAt")
        .map(([key, inner]) => [key, strip(inner)]),
    );
  };
  return model.items.map(strip);
}

function only<K extends ChatItem["kind"]>(model: ChatModel, kind: K): Extract<ChatItem, { kind: K }>[] {
  return model.items.filter((item): item is Extract<ChatItem, { kind: K }> => item.kind === kind);
}

const state: State = {
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

test("a chat redrawn from the transcript is the chat shown live", () => {
  // Live: events as they came, cards added and answered by the approval handlers.
  let live = applyState(emptyChat(), state);
  const now = 1_000;
  const step = (event: EventBody): void => {
    live = applyEvent(live, ev(event), now);
  };
  step({ type: "turnStarted", prompt: "fix it" });
  step({ type: "thinkingDelta", text: "let me " });
  step({ type: "thinkingDelta", text: "look" });
  step({ type: "textDelta", text: "Looking at " });
  step({ type: "textDelta", text: "the file." });
  step({ type: "toolStarted", toolUseId: "u1", name: "read_file", input: { path: "a.py" }, batch: 0, concurrent: false });
  step({ type: "toolFinished", toolUseId: "u1", name: "read_file", status: "ok", output: "1 x = 1", durationMs: 3 });
  step({ type: "textDelta", text: "Partial that is vo" });
  step({ type: "stepRestarted", reason: "overloaded" });
  step({ type: "textDelta", text: "A plan first." });
  live = addPlanCard(live, "plan-1", "t1", "1. edit a.py");
  live = decidePlan(live, "plan-1", { approved: false, feedback: "smaller" });
  step({ type: "planDecided", approved: false, feedback: "smaller" });
  live = addPlanCard(live, "plan-2", "t1", "1. edit one line");
  live = decidePlan(live, "plan-2", { approved: true, mode: "acceptEdits" });
  step({ type: "planDecided", approved: true });
  step({ type: "notice", text: "Mode is now acceptEdits" });
  step({ type: "toolStarted", toolUseId: "u2", name: "bash", input: { command: "rm -rf build" }, batch: 0, concurrent: false });
  live = addConfirmCard(live, "confirm-1", { turnId: "t1", toolUseId: "u2", name: "bash", input: {}, preview: { kind: "command", command: "rm -rf build", cwd: "/w" } });
  live = decideConfirm(live, "confirm-1", { state: "deny", feedback: "keep it" }, now);
  step({ type: "toolFinished", toolUseId: "u2", name: "bash", status: "denied", output: "Denied by the user. Their feedback: keep it", durationMs: 0 });
  step({ type: "toolStarted", toolUseId: "u3", name: "edit_file", input: { path: "a.py" }, batch: 0, concurrent: false });
  step({ type: "toolFinished", toolUseId: "u3", name: "edit_file", status: "ok", output: "edited", durationMs: 5, diff: { added: 1, removed: 1 } });
  live = addCheckpointCard(live, "checkpoint-1", "t1", 3);
  live = decideCheckpoint(live, "checkpoint-1", { state: "continue" });
  step({ type: "textDelta", text: "Done." });
  step({ type: "turnEnded", outcome: "completed", final: "Done.", trail: [] });

  // The transcript the server keeps of the same session.
  const entries = [
    { kind: "turnStarted", prompt: "fix it" },
    { kind: "assistantThinking", text: "let me look" },
    { kind: "assistantText", text: "Looking at the file." },
    { kind: "toolStarted", toolUseId: "u1", name: "read_file", input: { path: "a.py" }, batch: 0, concurrent: false },
    { kind: "toolFinished", toolUseId: "u1", name: "read_file", status: "ok", output: "1 x = 1", durationMs: 3 },
    { kind: "assistantText", text: "Partial that is vo" },
    { kind: "stepRestarted", reason: "overloaded" },
    { kind: "assistantText", text: "A plan first." },
    { kind: "planRequested", plan: "1. edit a.py" },
    { kind: "planDecided", approved: false, feedback: "smaller" },
    { kind: "planRequested", plan: "1. edit one line" },
    { kind: "planDecided", approved: true },
    { kind: "notice", text: "Mode is now acceptEdits" },
    { kind: "toolStarted", toolUseId: "u2", name: "bash", input: { command: "rm -rf build" }, batch: 0, concurrent: false },
    { kind: "confirmRequested", toolUseId: "u2", name: "bash", preview: { kind: "command", command: "rm -rf build", cwd: "/w" } },
    { kind: "confirmDecided", toolUseId: "u2", decision: "deny", feedback: "keep it" },
    { kind: "toolFinished", toolUseId: "u2", name: "bash", status: "denied", output: "Denied by the user. Their feedback: keep it", durationMs: 0 },
    { kind: "toolStarted", toolUseId: "u3", name: "edit_file", input: { path: "a.py" }, batch: 0, concurrent: false },
    { kind: "toolFinished", toolUseId: "u3", name: "edit_file", status: "ok", output: "edited", durationMs: 5, diff: { added: 1, removed: 1 } },
    { kind: "checkpointRequested", toolsUsed: 3 },
    { kind: "checkpointDecided", continue: true },
    { kind: "assistantText", text: "Done." },
    { kind: "turnEnded", outcome: "completed", final: "Done.", trail: [] },
  ].map((entry, index) => ({ seq: index + 1, turnId: "t1", ...entry }));
  const redrawn = applyState(fromTranscript("s1", entries), state);

  assert.deepEqual(view(redrawn), view(live));
  // And it says what a user saw: both plans with their text and decision, the question on
  // its row, plain words for the mode, the restarted step's first attempt gone.
  const plans = only(redrawn, "plan");
  assert.deepEqual(plans.map((plan) => [plan.plan, plan.decision.state]), [
    ["1. edit a.py", "rejected"],
    ["1. edit one line", "approved"],
  ]);
  const bash = only(redrawn, "tool").find((tool) => tool.toolUseId === "u2");
  assert.deepEqual(bash?.confirm?.decision, { state: "deny", feedback: "keep it" });
  assert.ok(only(redrawn, "notice").some((notice) => notice.text === "Mode: accept edits"));
  assert.ok(!only(redrawn, "assistant").some((item) => item.text.includes("Partial")));
  assert.deepEqual(only(redrawn, "tool").find((tool) => tool.toolUseId === "u3")?.diff, { added: 1, removed: 1 });
});

test("a confirmation sits on its tool row, before any output", () => {
  let model = applyEvent(emptyChat(), ev({ type: "turnStarted", prompt: "run" }));
  model = applyEvent(model, ev({ type: "toolStarted", toolUseId: "u1", name: "bash", input: { command: "make" }, batch: 0, concurrent: false }), 10);
  model = addConfirmCard(model, "confirm-1", { turnId: "t1", toolUseId: "u1", name: "bash", input: {}, preview: { kind: "command", command: "make", cwd: "/w" } });
  assert.deepEqual(model.items.map((item) => item.kind), ["user", "tool"]);
  assert.equal(only(model, "tool")[0]?.confirm?.decision.state, "pending");
  model = decideConfirm(model, "confirm-1", { state: "allow" }, 50);
  const [tool] = only(model, "tool");
  assert.equal(tool?.confirm?.decision.state, "allow");
  assert.equal(tool?.startedAt, 50, "the timer counts from the approval");
});

test("live output streams into a running row and an interrupt keeps it with the real duration", () => {
  let model = applyEvent(emptyChat(), ev({ type: "turnStarted", prompt: "run" }));
  model = applyEvent(model, ev({ type: "toolStarted", toolUseId: "u1", name: "bash", input: { command: "make" }, batch: 0, concurrent: false }), 1_000);
  model = applyEvent(model, ev({ type: "toolOutput", toolUseId: "u1", text: "step 1\n" }), 1_200);
  model = applyEvent(model, ev({ type: "toolOutput", toolUseId: "u1", text: "step 2\n" }), 1_400);
  assert.equal(only(model, "tool")[0]?.output, "step 1\nstep 2\n");
  assert.equal(only(model, "tool")[0]?.status, "running");
  // A server that reports neither output nor duration for the interrupted call.
  model = applyEvent(model, ev({ type: "toolFinished", toolUseId: "u1", name: "bash", status: "interrupted", output: "", durationMs: 0 }), 4_000);
  const [tool] = only(model, "tool");
  assert.equal(tool?.output, "step 1\nstep 2\n");
  assert.equal(tool?.durationMs, 3_000);
  // Output after the end is ignored.
  model = applyEvent(model, ev({ type: "toolOutput", toolUseId: "u1", text: "late" }), 5_000);
  assert.equal(only(model, "tool")[0]?.output, "step 1\nstep 2\n");
});

test("the server's partial output of an interrupted command replaces the live copy", () => {
  let model = applyEvent(emptyChat(), ev({ type: "toolStarted", toolUseId: "u1", name: "bash", input: { command: "make" }, batch: 0, concurrent: false }), 0);
  model = applyEvent(model, ev({ type: "toolOutput", toolUseId: "u1", text: "a\n" }), 1);
  model = applyEvent(model, ev({ type: "toolFinished", toolUseId: "u1", name: "bash", status: "interrupted", output: "a\nb\n[interrupted: partial output]", durationMs: 2500 }), 9);
  assert.equal(only(model, "tool")[0]?.output, "a\nb\n[interrupted: partial output]");
  assert.equal(only(model, "tool")[0]?.durationMs, 2500);
});

test("a turn cut by a server crash is marked and the restart notice survives the redraw", () => {
  let live = applyState(emptyChat(), state);
  live = applyEvent(live, ev({ type: "turnStarted", prompt: "long job" }), 0);
  live = applyEvent(live, ev({ type: "toolStarted", toolUseId: "u1", name: "bash", input: { command: "sleep 30" }, batch: 0, concurrent: false }), 0);
  live = applyConnection(live, "starting", "crash");
  const carry = trailingConnectionNotices(live);
  assert.equal(carry.length, 1);
  const redrawn = fromTranscript(
    "s1",
    [
      { seq: 1, turnId: "t1", kind: "turnStarted", prompt: "long job" },
      { seq: 2, turnId: "t1", kind: "toolStarted", toolUseId: "u1", name: "bash", input: { command: "sleep 30" }, batch: 0, concurrent: false },
      { seq: 3, turnId: "t1", kind: "turnEnded", outcome: "interrupted", cause: "server_stopped", trail: [] },
    ],
    false,
    carry,
  );
  assert.deepEqual(redrawn.items.map((item) => item.kind), ["user", "tool", "turnEnd", "notice"]);
  assert.equal(only(redrawn, "turnEnd")[0]?.cause, "server_stopped");
  assert.equal(only(redrawn, "tool")[0]?.status, "interrupted");
  assert.match(only(redrawn, "notice")[0]?.text ?? "", /stopped; restarting/);
});

test("a deliberate restart says so, not that the server stopped", () => {
  let live = applyState(emptyChat(), state);
  live = applyConnection(live, "stopped", "restart");
  assert.equal(only(live, "notice")[0]?.text, "Restarting the Tiller server…");
  assert.equal(only(live, "notice")[0]?.level, "info");
});

test("queued prompts that will not run are listed; a refusal ends the turn with its reason", () => {
  let model = applyEvent(emptyChat(), ev({ type: "queueDropped", prompts: ["one", "two"] }, null));
  assert.match(only(model, "notice")[0]?.text ?? "", /2 queued prompt\(s\) will not run: “one”, “two”/);
  model = applyEvent(model, ev({ type: "turnStarted", prompt: "x" }));
  model = applyEvent(model, ev({ type: "turnEnded", outcome: "refused", refusal: { category: "cyber", explanation: "no" }, trail: [] }));
  assert.deepEqual(only(model, "turnEnd")[0]?.refusal, { category: "cyber", explanation: "no" });
});

test("mode ids read as plain words", () => {
  assert.equal(plainWords("Mode is now acceptEdits"), "Mode: accept edits");
  assert.equal(plainWords("Mode: default"), "Mode: ask before edits");
  assert.equal(plainWords("The user approved the plan (mode is now plan)."), "The user approved the plan (mode: plan).");
});

test("context and cost show only once the server sends them", () => {
  assert.equal(usageText(state), "");
  assert.equal(usageText({ ...state, context: null, sessionCostUsd: null }), "");
  assert.equal(usageText({ ...state, context: { usedTokens: 0, windowTokens: 200_000 }, sessionCostUsd: 0 }), "", "a fresh chat");
  assert.equal(usageText({ ...state, context: { usedTokens: 12_345, windowTokens: 200_000 }, sessionCostUsd: 0.0312 }), "ctx 12.3k/200k (6%) · $0.03");
  assert.equal(usageText({ ...state, sessionCostUsd: 0.001 }), "<$0.01");
});

test("a rewind fades the rewound turns, offers its undo, and the undo restores them", () => {
  const entries = [
    { seq: 1, turnId: "t1", kind: "turnStarted", prompt: "first" },
    { seq: 2, turnId: "t1", kind: "turnEnded", outcome: "completed", trail: [] },
    { seq: 3, turnId: "t2", kind: "turnStarted", prompt: "write a file" },
    { seq: 4, turnId: "t2", kind: "turnEnded", outcome: "completed", trail: [] },
    { seq: 5, turnId: "t2", kind: "rewound", files: true, conversation: true, undoId: "undo_1", changed: [], added: ["a.txt"], removed: [] },
  ];
  const rewound = fromTranscript("s1", entries);
  const notice = only(rewound, "notice").at(-1);
  assert.equal(notice?.text, "Rewound files (0 changed, 1 added, 0 removed) and the conversation to before “write a file”.");
  assert.equal(notice?.undoId, "undo_1");
  assert.deepEqual(rewound.items.map((item) => item.faded === true), [false, false, true, true, false]);
  const undone = fromTranscript("s1", [...entries, { seq: 6, turnId: null, kind: "rewindUndone", undoId: "undo_1", changed: [], added: [], removed: ["a.txt"] }]);
  assert.ok(undone.items.every((item) => item.faded !== true));
  assert.equal(only(undone, "notice").find((item) => item.undoId !== undefined), undefined);
  assert.match(only(undone, "notice").at(-1)?.text ?? "", /Rewind undone/);
});
