// The chat drawn live equals the chat redrawn from the transcript, on what the real server
// posted and journaled (tests/journal_sample.py drives it through a session); how the
// approval requests adopt the cards their events drew; and the v2 events (live output, diffs,
// step restarts, crash-cut turns).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import {
  addConfirmCard,
  checkpointDecision,
  confirmDecision,
  decideCheckpoint,
  decideConfirm,
  decidePlan,
  openCheckpointCard,
  openConfirmCard,
  openPlanCard,
} from "../../src/chat/cards";
import { emptyChat, type ChatModel } from "../../src/chat/items";
import { applyEvent, applyState, fromTranscript } from "../../src/chat/model";
import { applyConnection, trailingConnectionNotices } from "../../src/chat/notices";
import { plainWords, usageText } from "../../src/chat/words";
import type {
  ApprovePlanParams,
  ApprovePlanResult,
  CheckpointParams,
  CheckpointResult,
  ConfirmToolParams,
  ConfirmToolResult,
  State,
  TillerEvent,
} from "../../src/protocol";
import { eventMaker, IDLE_STATE, only } from "./fixtures";

const ev = eventMaker();

const state: State = IDLE_STATE;

const EXT_DIR = path.resolve(__dirname, "..", "..");
const PYTHON = process.env.TILLER_PYTHON ?? path.join(EXT_DIR, "..", ".venv", "bin", "python");
const SAMPLE_SCRIPT = path.join(EXT_DIR, "..", "tests", "journal_sample.py");

/** One thing the server sent, in arrival order: an event, or a question and the answer it got. */
type LiveItem =
  | { event: TillerEvent }
  | { request: "tiller/confirmTool"; params: ConfirmToolParams; result: ConfirmToolResult }
  | { request: "tiller/approvePlan"; params: ApprovePlanParams; result: ApprovePlanResult }
  | { request: "tiller/checkpoint"; params: CheckpointParams; result: CheckpointResult };

type Question = Exclude<LiveItem, { event: TillerEvent }>;

interface JournalSample {
  sessionId: string;
  live: LiveItem[];
  transcript: unknown[];
}

/** Runs the real server through a session (tests/journal_sample.py); undefined without the venv. */
function journalSample(): JournalSample | undefined {
  if (!existsSync(PYTHON)) return undefined;
  const run = spawnSync(PYTHON, [SAMPLE_SCRIPT], { encoding: "utf8", timeout: 180_000, maxBuffer: 64 * 1024 * 1024 });
  assert.equal(run.status, 0, `journal_sample.py failed (${run.status ?? run.signal}):\n${run.stderr}`);
  return JSON.parse(run.stdout) as JournalSample;
}

/**
 * The live chat: events through `applyEvent`, questions through what the approval handlers
 * (src/approvals.ts) do with them, the user's answer given as the script gave it.
 */
function foldLive(live: LiveItem[]): ChatModel {
  let model = emptyChat();
  let now = 1_000;
  let asked = 0;
  for (const item of live) {
    now += 10;
    if ("event" in item) {
      model = applyEvent(model, item.event, now);
      continue;
    }
    asked += 1;
    switch (item.request) {
      case "tiller/confirmTool": {
        const opened = openConfirmCard(model, `confirm-${asked}`, item.params);
        model = decideConfirm(opened.model, opened.id, confirmDecision(item.result), now);
        break;
      }
      case "tiller/approvePlan": {
        const opened = openPlanCard(model, `plan-${asked}`, item.params.turnId, item.params.plan);
        model = decidePlan(opened.model, opened.id, item.result);
        break;
      }
      case "tiller/checkpoint": {
        const opened = openCheckpointCard(model, `checkpoint-${asked}`, item.params.turnId, item.params.toolsUsed);
        model = decideCheckpoint(opened.model, opened.id, checkpointDecision(item.result));
        break;
      }
    }
  }
  return model;
}

const VOLATILE = new Set(["id", "startedAt", "durationMs", "streaming"]);

/** The items without what differs from one drawing to the next (ids, timers, streaming). */
function normalized(model: ChatModel): unknown {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (typeof value !== "object" || value === null) return value;
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key, inner]) => !VOLATILE.has(key) && inner !== undefined)
        .map(([key, inner]) => [key, strip(inner)]),
    );
  };
  return strip(model.items);
}

test("a chat redrawn from what the real server journaled is the chat it showed live", { timeout: 240_000 }, (t) => {
  const sample = journalSample();
  if (sample === undefined) {
    t.skip(`no Python at ${PYTHON} (set TILLER_PYTHON, or create the repo's .venv): the real server cannot run`);
    return;
  }
  const live = foldLive(sample.live);
  const redrawn = fromTranscript(sample.sessionId, sample.transcript);
  assert.deepEqual(normalized(redrawn), normalized(live));

  // What the session went through is all there, once: every question is one card (the event
  // drew it, the request adopted it), on its tool row where it has one.
  const requests = (method: Question["request"]): number => sample.live.filter((item) => "request" in item && item.request === method).length;
  assert.ok(requests("tiller/confirmTool") >= 2 && requests("tiller/approvePlan") >= 2 && requests("tiller/checkpoint") >= 1, "the sample asks every kind of question");
  for (const model of [live, redrawn]) {
    const tools = only(model, "tool");
    assert.equal(tools.filter((tool) => tool.confirm !== undefined).length, requests("tiller/confirmTool"));
    assert.equal(only(model, "confirm").length, 0, "no confirmation apart from its row");
    assert.deepEqual(tools.find((tool) => tool.name === "edit_file")?.confirm?.decision, { state: "allow" });
    assert.deepEqual(tools.find((tool) => tool.name === "write_file")?.confirm?.decision, { state: "deny", feedback: "no changelog, please" });
    assert.deepEqual(
      only(model, "plan").map((plan) => plan.decision.state),
      ["rejected", "approved"],
    );
    assert.equal(only(model, "checkpoint").length, requests("tiller/checkpoint"));
    assert.ok(only(model, "checkpoint").every((card) => card.decision.state === "continue"));
    assert.ok(only(model, "thinking").length > 0 && only(model, "assistant").length > 0);
    const command = model.items.filter((item) => item.kind === "user" && item.text === "/mode plan");
    assert.equal(command.length, 1, "the slash command shows once");
    assert.ok(only(model, "notice").some((notice) => notice.text === "Mode: plan"));
    assert.ok(only(model, "notice").some((notice) => notice.text.startsWith("Rewound files (1 reverted) and the conversation")));
    assert.ok(only(model, "notice").some((notice) => notice.text.startsWith("Rewind undone")));
    assert.ok(model.items.every((item) => item.faded !== true), "the undone rewind fades nothing");
    assert.ok(only(model, "notice").some((notice) => notice.text.includes("retrying this step")));
    assert.ok(only(model, "notice").some((notice) => notice.text.startsWith("The answer restarted (overloaded)")));
    assert.ok(!only(model, "assistant").some((item) => item.text.includes("first attempt")), "the restarted step's first attempt is gone");
  }
  assert.ok(
    redrawn.items.every((item) => (item.kind !== "assistant" && item.kind !== "thinking") || !item.streaming),
    "replayed text is settled",
  );
});

test("a question's card is drawn by its event and adopted by the request that follows", () => {
  let model = applyEvent(emptyChat(), ev({ type: "turnStarted", prompt: "go" }));
  model = applyEvent(model, ev({ type: "toolStarted", toolUseId: "u1", name: "bash", input: { command: "make" }, batch: 0, concurrent: false }), 10);
  model = applyEvent(model, ev({ type: "confirmRequested", toolUseId: "u1", name: "bash", preview: { kind: "command", command: "make" } }));
  const params: ConfirmToolParams = { turnId: "t1", toolUseId: "u1", name: "bash", input: {}, preview: { kind: "command", command: "make", cwd: "/w" } };
  const confirm = openConfirmCard(model, "confirm-1", params);
  assert.equal(confirm.model, model, "nothing new is drawn");
  assert.equal(confirm.id, only(model, "tool")[0]?.confirm?.id);

  model = applyEvent(model, ev({ type: "planRequested", plan: "1. a" }));
  const plan = openPlanCard(model, "plan-1", "t1", "1. a");
  assert.equal(plan.model, model);
  assert.equal(plan.id, only(model, "plan")[0]?.id);

  model = applyEvent(model, ev({ type: "checkpointRequested", toolsUsed: 20 }));
  const checkpoint = openCheckpointCard(model, "checkpoint-1", "t1", 20);
  assert.equal(checkpoint.model, model);
  assert.equal(checkpoint.id, only(model, "checkpoint")[0]?.id);

  // A server that posts no such events: the request draws the card.
  const older = openPlanCard(applyEvent(emptyChat(), ev({ type: "turnStarted", prompt: "go" })), "plan-9", "t1", "1. b");
  assert.equal(older.id, "plan-9");
  assert.deepEqual(only(older.model, "plan").map((card) => card.plan), ["1. b"]);
  const olderConfirm = openConfirmCard(emptyChat(), "confirm-9", params);
  assert.equal(olderConfirm.id, "confirm-9");
  assert.equal(only(olderConfirm.model, "confirm").length, 1);
});

test("a decided event leaves the user's answer as it is, and decides a card nobody answered", () => {
  let model = applyEvent(emptyChat(), ev({ type: "turnStarted", prompt: "go" }));
  model = applyEvent(model, ev({ type: "confirmRequested", toolUseId: "u1", name: "bash", preview: { kind: "command", command: "make" } }));
  const params: ConfirmToolParams = { turnId: "t1", toolUseId: "u1", name: "bash", input: {}, preview: { kind: "command", command: "make", cwd: "/w" } };
  const { id } = openConfirmCard(model, "confirm-1", params);
  model = decideConfirm(model, id, confirmDecision({ decision: "allowSession" }));
  const answered = model;
  model = applyEvent(model, ev({ type: "confirmDecided", toolUseId: "u1", decision: "allowSession" }));
  assert.deepEqual(model.items, answered.items);

  // A checkpoint the server gave up on (the request was cancelled, then it failed closed).
  model = applyEvent(model, ev({ type: "checkpointRequested", toolsUsed: 20 }));
  const checkpoint = openCheckpointCard(model, "checkpoint-1", "t1", 20);
  model = decideCheckpoint(model, checkpoint.id, checkpointDecision(undefined));
  assert.equal(only(model, "checkpoint")[0]?.decision.state, "cancelled");
  model = applyEvent(model, ev({ type: "checkpointDecided", continue: false }));
  assert.equal(only(model, "checkpoint")[0]?.decision.state, "stop");

  // A confirmation that timed out without a click.
  model = applyEvent(model, ev({ type: "confirmRequested", toolUseId: "u2", name: "bash", preview: { kind: "command", command: "rm x" } }));
  model = applyEvent(model, ev({ type: "confirmDecided", toolUseId: "u2", decision: "deny" }));
  assert.deepEqual(only(model, "confirm").find((card) => card.toolUseId === "u2")?.decision, { state: "deny" });

  // A plan answered here, then the server's word on it.
  model = applyEvent(model, ev({ type: "planRequested", plan: "1. a" }));
  const plan = openPlanCard(model, "plan-1", "t1", "1. a");
  model = decidePlan(model, plan.id, { approved: false, feedback: "smaller" });
  model = applyEvent(model, ev({ type: "planDecided", approved: false, feedback: "smaller" }));
  assert.deepEqual(only(model, "plan").map((card) => card.decision), [{ state: "rejected", feedback: "smaller" }]);
});

test("a slash command is drawn by its event: the typed command and the server's answer", () => {
  let model = applyEvent(emptyChat(), ev({ type: "turnStarted", prompt: "go" }));
  model = applyEvent(model, ev({ type: "textDelta", text: "working" }));
  model = applyEvent(model, ev({ type: "command", text: "/mode acceptEdits", message: "Mode: acceptEdits" }, null));
  const [, assistant, command, answer] = model.items;
  assert.equal(assistant?.kind === "assistant" && assistant.streaming, false, "the text before it is settled");
  assert.deepEqual(command?.kind === "user" ? [command.text, command.local, command.turnId] : [], ["/mode acceptEdits", true, undefined]);
  assert.deepEqual(answer?.kind === "notice" ? answer.text : undefined, "Mode: accept edits");
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
  assert.equal(notice?.text, "Rewound files (1 deleted) and the conversation to before “write a file”.");
  assert.equal(notice?.undoId, "undo_1");
  assert.deepEqual(rewound.items.map((item) => item.faded === true), [false, false, true, true, false]);
  const undone = fromTranscript("s1", [...entries, { seq: 6, turnId: null, kind: "rewindUndone", undoId: "undo_1", changed: [], added: [], removed: ["a.txt"] }]);
  assert.ok(undone.items.every((item) => item.faded !== true));
  assert.equal(only(undone, "notice").find((item) => item.undoId !== undefined), undefined);
  assert.match(only(undone, "notice").at(-1)?.text ?? "", /Rewind undone/);
});
