// Regression tests for what users of the extension reported: retry lines stacking, two hints
// on one error, the welcome view lost to a mode change, mode words, "in progress" while idle,
// stop notices without a restart line, plans shown twice, approval wait counted as run time,
// and a fork's redraw losing the rewind's fading.
import assert from "node:assert/strict";
import { test } from "node:test";
import { addPlanCard, decideConfirm, openPlanCard, withdraws } from "../../src/chat/cards";
import { emptyChat, type ChatModel } from "../../src/chat/items";
import { applyEvent, applyState, fromTranscript } from "../../src/chat/model";
import {
  addNotice,
  addNoticeOnce,
  applyConnection,
  isSettingNotice,
  RESTARTED_NOTICE,
  retryKind,
  showsWelcome,
  trailingConnectionNotices,
} from "../../src/chat/notices";
import { hintFor, plainWords, plural, splitPromptNote, thinkingWords } from "../../src/chat/words";
import type { ErrorKind, State, TillerEvent } from "../../src/protocol";
import { eventMaker, IDLE_STATE, only } from "./fixtures";

const ev = eventMaker();

function play(events: TillerEvent[], model: ChatModel = emptyChat()): ChatModel {
  return events.reduce((acc, event) => applyEvent(acc, event, 1_000), model);
}

const state: State = IDLE_STATE;

// --- 1. retry notices -----------------------------------------------------------------------

test("retry notices of one kind show once per turn, counted, instead of stacking", () => {
  const model = play([
    ev({ type: "turnStarted", prompt: "hi" }),
    ev({ type: "notice", text: "Model API busy or unreachable: retrying in 0.4 s" }),
    ev({ type: "notice", text: "Model API busy or unreachable: retrying in 0.9 s" }),
    ev({ type: "notice", text: "The model API failed during the response (overloaded): retrying this step in 1 s (1/3)" }),
    ev({ type: "stepRestarted", reason: "overloaded" }),
    ev({ type: "notice", text: "Model API busy or unreachable: retrying in 0.5 s" }),
    ev({ type: "notice", text: "The model API failed during the response (overloaded): retrying this step in 2 s (2/3)" }),
    ev({ type: "stepRestarted", reason: "overloaded" }),
    ev({ type: "notice", text: "The model API failed during the response (overloaded): retrying this step in 4 s (3/3)" }),
    ev({ type: "stepRestarted", reason: "overloaded" }),
  ]);
  const notices = only(model, "notice");
  assert.equal(notices.length, 3, notices.map((notice) => notice.text).join("\n"));
  const sdk = notices.find((notice) => notice.text.startsWith("Model API busy"));
  assert.equal(sdk?.text, "Model API busy or unreachable: retrying in 0.5 s", "the latest wait is shown");
  assert.equal(sdk?.repeats, 3);
  const step = notices.find((notice) => notice.text.includes("retrying this step"));
  assert.match(step?.text ?? "", /\(3\/3\)$/);
  assert.equal(step?.repeats, 3);
  assert.equal(notices.find((notice) => notice.text.startsWith("The answer restarted"))?.repeats, 3);
});

test("retry notices of another turn, and other notices, are not folded", () => {
  const model = play([
    ev({ type: "turnStarted", prompt: "one" }),
    ev({ type: "notice", text: "Model API busy or unreachable: retrying in 0.4 s" }),
    ev({ type: "turnEnded", outcome: "completed", trail: [] }),
    ev({ type: "turnStarted", prompt: "two" }, "t2"),
    ev({ type: "notice", text: "Model API busy or unreachable: retrying in 0.4 s" }, "t2"),
    ev({ type: "notice", text: "Queued: x" }, "t2"),
    ev({ type: "notice", text: "Queued: x" }, "t2"),
  ]);
  assert.equal(only(model, "notice").length, 4);
  assert.equal(retryKind("Queued: x"), undefined);
  assert.equal(retryKind("retrying in 0.4 s"), retryKind("retrying in 12 s"));
});

test("a chat redrawn from the transcript folds retries the same way", () => {
  const model = fromTranscript("s1", [
    { seq: 1, turnId: "t1", kind: "turnStarted", prompt: "hi" },
    { seq: 2, turnId: "t1", kind: "notice", text: "Model API busy or unreachable: retrying in 0.4 s" },
    { seq: 3, turnId: "t1", kind: "notice", text: "Model API busy or unreachable: retrying in 0.8 s" },
    { seq: 4, turnId: "t1", kind: "turnEnded", outcome: "failed", error: { kind: "overloaded", message: "Overloaded", retryable: true }, trail: [] },
  ]);
  assert.equal(only(model, "notice").length, 1);
});

// --- 2. one hint per error --------------------------------------------------------------------

test("a failed turn whose prompt was dropped says to send it again, once, and never 'continue'", () => {
  const model = play([
    ev({ type: "turnStarted", prompt: "hi" }),
    ev({
      type: "turnEnded",
      outcome: "failed",
      error: { kind: "rate_limit", message: "Rate limited (429). (The prompt was not added to the conversation: send it again.)", retryable: true },
      trail: [],
    }),
  ]);
  const [end] = only(model, "turnEnd");
  assert.equal(end?.error?.message, "Rate limited (429).", "the server's remark is said by the hint instead");
  assert.match(end?.hint?.text ?? "", /send your prompt again/);
  assert.doesNotMatch(end?.hint?.text ?? "", /continue/);
});

test("every error kind has one hint that names one way to go on", () => {
  const kinds: ErrorKind[] = ["auth", "rate_limit", "overloaded", "server", "connection", "timeout", "context_too_long", "invalid_request", "output_limit", "internal"];
  for (const kind of kinds) {
    for (const kept of [true, false]) {
      const text = hintFor(kind, kept).text;
      const ways = [/say “continue”/.test(text), /send your prompt again/.test(text)].filter(Boolean).length;
      assert.ok(ways <= 1, `${kind}: ${text}`);
      if (kind !== "context_too_long") assert.equal(ways, 1, `${kind}: ${text}`);
    }
  }
  assert.equal(hintFor("auth").command?.id, "tiller.setApiKey");
  assert.deepEqual(splitPromptNote("Overloaded."), { message: "Overloaded.", promptKept: true });
});

// --- 3. welcome view --------------------------------------------------------------------------

test("cycling the mode or toggling thinking keeps the welcome view; a prompt ends it", () => {
  let model = applyState(emptyChat(), state);
  assert.ok(showsWelcome(model.items));
  model = applyEvent(model, ev({ type: "notice", text: "Mode: accept edits" }, null));
  model = applyEvent(model, ev({ type: "notice", text: "Mode: plan" }, null));
  model = addNotice(model, `Thinking: ${thinkingWords({ enabled: true, effort: "high", budgetTokens: null })}`);
  assert.ok(showsWelcome(model.items), "setting notices are not conversation");
  model = applyConnection(applyConnection(model, "starting", "restart"), "running");
  assert.ok(showsWelcome(model.items), "nor is a restart");
  model = applyEvent(model, ev({ type: "turnStarted", prompt: "hi" }));
  assert.ok(!showsWelcome(model.items));
  assert.ok(!isSettingNotice({ kind: "notice", id: "x", level: "info", text: "Queued: x" }));
});

// --- 4. mode words ----------------------------------------------------------------------------

test("modes read the same everywhere: ask before edits, accept edits, plan", () => {
  assert.equal(plainWords("Mode: accept edits"), "Mode: accept edits");
  assert.equal(plainWords("Mode: acceptEdits"), "Mode: accept edits");
  assert.equal(plainWords("Mode is now default"), "Mode: ask before edits");
  // The server's list of names /mode takes: the words, then the id, not the words twice.
  assert.equal(
    plainWords("Unknown mode 'x'. Modes: ask before edits (default), accept edits (acceptEdits), plan"),
    "Unknown mode 'x'. Modes: ask before edits (default), accept edits (acceptEdits), plan",
  );
});

// --- 5. nothing in progress while idle --------------------------------------------------------

test("an idle state settles what still looks in progress (its turnEnded was lost)", () => {
  let model = applyState(emptyChat(), { ...state, busy: true, turnId: "t1" });
  model = play([
    ev({ type: "turnStarted", prompt: "go" }),
    ev({ type: "textDelta", text: "working" }),
    ev({ type: "toolStarted", toolUseId: "u1", name: "bash", input: { command: "sleep 9" }, batch: 0, concurrent: false }),
  ], model);
  const busy = applyState(model, { ...state, busy: true, turnId: "t1" }, 2_000);
  assert.equal(busy.items, model.items, "a busy state changes no item");
  const idle = applyState(model, { ...state, busy: false, turnId: "t1" }, 4_000);
  assert.equal(only(idle, "tool")[0]?.status, "interrupted");
  assert.equal(only(idle, "tool")[0]?.durationMs, 3_000);
  assert.ok(only(idle, "assistant").every((item) => !item.streaming));
});

// --- 6. restarts --------------------------------------------------------------------------------

test("after a crash, the new server is announced and both lines survive the redraw", () => {
  let live = applyState(emptyChat(), state);
  live = applyConnection(live, "starting", "crash");
  live = applyConnection(live, "running");
  assert.deepEqual(
    only(live, "notice").map((notice) => [notice.text, notice.level]),
    [
      ["The Tiller server stopped; restarting it…", "error"],
      [RESTARTED_NOTICE, "info"],
    ],
  );
  const carry = trailingConnectionNotices(live);
  const redrawn = fromTranscript("s1", [{ seq: 1, turnId: "t1", kind: "turnStarted", prompt: "hi" }], false, carry);
  assert.deepEqual(
    redrawn.items.map((item) => (item.kind === "notice" ? item.text : item.kind)),
    ["user", "The Tiller server stopped; restarting it…", RESTARTED_NOTICE],
  );
});

test("the first start says nothing, and a failure repeated while settings are typed shows once", () => {
  assert.equal(applyConnection(emptyChat(), "running").items.length, 0);
  let model = addNoticeOnce(emptyChat(), "The setting 'tiller.baseUrl' is not a valid http(s) URL", "error");
  model = addNoticeOnce(model, "The setting 'tiller.baseUrl' is not a valid http(s) URL", "error");
  assert.equal(model.items.length, 1);
});

// --- 11. plans shown once ---------------------------------------------------------------------

test("a plan given as the final text shows as the card only", () => {
  const plan = "1. Read the config\n2. Change the port\n3. Run the tests";
  const model = play([
    ev({ type: "turnStarted", prompt: "plan it" }),
    ev({ type: "textDelta", text: "1. Read the config\n2. Change the port\n" }),
    ev({ type: "textDelta", text: "3. Run the tests\n" }),
    ev({ type: "planRequested", plan }),
  ]);
  assert.deepEqual(model.items.map((item) => item.kind), ["user", "plan"]);
});

test("a plan written out before exit_plan_mode keeps only its lead-in above the card", () => {
  const plan = "1. Read the config\n2. Change the port";
  const model = play([
    ev({ type: "turnStarted", prompt: "plan it" }),
    ev({ type: "textDelta", text: `Here is the plan:\n\n${plan}` }),
    ev({ type: "toolStarted", toolUseId: "u1", name: "exit_plan_mode", input: { plan }, batch: 0, concurrent: false }),
    ev({ type: "planRequested", plan }),
  ]);
  assert.deepEqual(model.items.map((item) => item.kind), ["user", "assistant", "tool", "plan"]);
  assert.equal(only(model, "assistant")[0]?.text, "Here is the plan:");
});

test("other text before a plan stays, and a server without planRequested folds too", () => {
  const kept = play([ev({ type: "turnStarted", prompt: "plan it" }), ev({ type: "textDelta", text: "I looked at the code." }), ev({ type: "planRequested", plan: "1. a" })]);
  assert.deepEqual(kept.items.map((item) => item.kind), ["user", "assistant", "plan"]);
  const older = openPlanCard(play([ev({ type: "turnStarted", prompt: "plan it" }), ev({ type: "textDelta", text: "1. a\n2. b" })]), "plan-1", "t1", "1. a\n2. b");
  assert.deepEqual(older.model.items.map((item) => item.kind), ["user", "plan"]);
  assert.deepEqual(addPlanCard(emptyChat(), "p", "t1", "x").items.map((item) => item.kind), ["plan"]);
});

// --- 12. the timer starts when the call is allowed ------------------------------------------

test("a call that waits for approval starts its timer when allowed, not when shown", () => {
  let model = applyEvent(emptyChat(), ev({ type: "turnStarted", prompt: "edit" }), 0);
  model = applyEvent(
    model,
    ev({ type: "toolStarted", toolUseId: "u1", name: "edit_file", input: { path: "a.py" }, batch: 0, concurrent: false, permission: { decision: "ask", by: "mode default" } }),
    1_000,
  );
  assert.equal(only(model, "tool")[0]?.startedAt, undefined, "no timer while it waits");
  model = applyEvent(model, ev({ type: "confirmRequested", toolUseId: "u1", name: "edit_file", preview: { kind: "diff", path: "a.py" } }), 1_001);
  model = applyEvent(model, ev({ type: "confirmDecided", toolUseId: "u1", decision: "allow" }), 9_000);
  assert.equal(only(model, "tool")[0]?.startedAt, 9_000);

  // Answered here: the same.
  let here = applyEvent(
    emptyChat(),
    ev({ type: "toolStarted", toolUseId: "u2", name: "bash", input: { command: "make" }, batch: 0, concurrent: false, permission: { decision: "ask", by: "mode default" } }),
    1_000,
  );
  here = applyEvent(here, ev({ type: "confirmRequested", toolUseId: "u2", name: "bash", preview: { kind: "command", command: "make" } }), 1_000);
  const id = only(here, "tool")[0]?.confirm?.id ?? "";
  here = decideConfirm(here, id, { state: "allowSession" }, 5_000);
  assert.equal(only(here, "tool")[0]?.startedAt, 5_000);

  // Allowed without asking: it runs at once.
  const allowed = applyEvent(
    emptyChat(),
    ev({ type: "toolStarted", toolUseId: "u3", name: "read_file", input: { path: "a.py" }, batch: 0, concurrent: false, permission: { decision: "allow", by: "read-only" } }),
    7,
  );
  assert.equal(only(allowed, "tool")[0]?.startedAt, 7);
});

// --- 13. fork after rewind --------------------------------------------------------------------

/** A session: two turns, a rewind (files and conversation) to before the second, a third turn. */
const REWOUND_SESSION = [
  { seq: 1, turnId: "t1", kind: "turnStarted", prompt: "first" },
  { seq: 2, turnId: "t1", kind: "assistantText", text: "one" },
  { seq: 3, turnId: "t1", kind: "turnEnded", outcome: "completed", trail: [] },
  { seq: 4, turnId: "t2", kind: "turnStarted", prompt: "second" },
  { seq: 5, turnId: "t2", kind: "assistantText", text: "two" },
  { seq: 6, turnId: "t2", kind: "turnEnded", outcome: "completed", trail: [] },
  { seq: 7, turnId: "t2", kind: "rewound", files: true, conversation: true, undoId: "undo_1", reverted: ["a.txt"], deleted: [], restored: [] },
  { seq: 8, turnId: "t3", kind: "turnStarted", prompt: "third" },
  { seq: 9, turnId: "t3", kind: "assistantText", text: "three" },
  { seq: 10, turnId: "t3", kind: "turnEnded", outcome: "completed", trail: [] },
];

function fadedTexts(model: ChatModel): string[] {
  return model.items.filter((item) => item.faded === true && (item.kind === "user" || item.kind === "assistant")).map((item) => (item.kind === "user" || item.kind === "assistant" ? item.text : ""));
}

test("a fork's redraw (the parent's entries, copied) fades the rewound turns as the parent shows them", () => {
  const parent = fromTranscript("s1", REWOUND_SESSION);
  const fork = fromTranscript("s2", REWOUND_SESSION);
  assert.deepEqual(fadedTexts(parent), ["second", "two"]);
  assert.deepEqual(fadedTexts(fork), ["second", "two"], "the fork shows the rewind as the parent did");
  assert.ok(only(fork, "notice").some((notice) => notice.text.startsWith("Rewound files (1 reverted) and the conversation to before “second”")));
  assert.ok(fork.items.filter((item) => item.kind === "user" && item.text === "third").every((item) => item.faded !== true), "what came after is live");

  // Live, the same session faded the same turns.
  let live = emptyChat();
  for (const entry of REWOUND_SESSION) {
    const { seq: entrySeq, turnId, kind, ...fields } = entry;
    const type = kind === "assistantText" ? "textDelta" : kind;
    live = applyEvent(live, { ...fields, type, sessionId: "s1", turnId, seq: entrySeq } as unknown as TillerEvent, 1_000);
  }
  assert.deepEqual(fadedTexts(live), fadedTexts(fork));
});

test("a rewind to a prompt older than the shown page fades all the page's conversation", () => {
  const page = REWOUND_SESSION.slice(3); // t1 left out: "Older messages of this session are not shown."
  const earlier = [
    ...page.slice(0, 3),
    { seq: 7, turnId: "t1", kind: "rewound", files: false, conversation: true, undoId: "undo_2", reverted: [], deleted: [], restored: [] },
  ];
  const model = fromTranscript("s1", earlier, true);
  assert.deepEqual(fadedTexts(model), ["second", "two"]);
  assert.equal(only(model, "notice")[0]?.faded, undefined, "the paging notice is not conversation");
});

// --- 10. text helpers -------------------------------------------------------------------------

test("counts are pluralized", () => {
  assert.equal(plural(1, "line"), "1 line");
  assert.equal(plural(0, "line"), "0 lines");
  assert.equal(plural(12, "line"), "12 lines");
  assert.equal(plural(2, "entry", "entries"), "2 entries");
});

test("a server that failed to start (a bad setting) and then starts says it is up", () => {
  let model = applyConnection(emptyChat(), "stopped");
  model = addNoticeOnce(model, "The setting 'tiller.baseUrl' is not a valid http(s) URL: 'x'.", "error");
  model = applyConnection(applyConnection(model, "starting"), "running");
  assert.equal(only(model, "notice").at(-1)?.text, RESTARTED_NOTICE);
  // Only once: a state echo or a second "running" adds nothing.
  assert.equal(applyConnection(model, "running"), model);
});

test("a question is withdrawn by its turn's end or the server's decision, not by another's", () => {
  const edit = { kind: "confirm", turnId: "t1", toolUseId: "u1" } as const;
  assert.ok(withdraws(ev({ type: "turnEnded", outcome: "interrupted", trail: [] }), edit));
  assert.ok(withdraws(ev({ type: "confirmDecided", toolUseId: "u1", decision: "deny" }), edit));
  assert.ok(!withdraws(ev({ type: "confirmDecided", toolUseId: "u2", decision: "deny" }), edit));
  assert.ok(!withdraws(ev({ type: "turnEnded", outcome: "completed", trail: [] }, "t2"), edit));
  assert.ok(!withdraws(ev({ type: "planDecided", approved: true }), edit));
  assert.ok(withdraws(ev({ type: "planDecided", approved: true }), { kind: "plan", turnId: "t1" }));
  assert.ok(withdraws(ev({ type: "checkpointDecided", continue: false }), { kind: "checkpoint", turnId: "t1" }));
});
