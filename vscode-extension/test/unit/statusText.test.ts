import assert from "node:assert/strict";
import { test } from "node:test";
import type { State } from "../../src/protocol";
import { shortModel, statusText, statusTooltip } from "../../src/statusText";

function state(overrides: Partial<State> = {}): State {
  return {
    sessionId: "s1",
    mode: "default",
    model: "claude-sonnet-4-5-20250929",
    thinking: { enabled: false, budgetTokens: 4000 },
    busy: false,
    turnId: null,
    queue: [],
    activeTodo: null,
    todoCounts: { completed: 0, total: 0 },
    toolsUsed: 0,
    ...overrides,
  };
}

test("status shows mode and model when idle without todos", () => {
  assert.equal(statusText(state()), "$(compass) ask before edits · claude-sonnet-4-5");
});

test("status shows the active todo with done/total counts while a turn runs", () => {
  const text = statusText(state({ busy: true, turnId: "t1", mode: "acceptEdits", activeTodo: "Running the tests", todoCounts: { completed: 3, total: 8 } }));
  assert.equal(text, "$(sync~spin) accept edits · claude-sonnet-4-5 · Running the tests (3/8)");
});

test("a todo left in progress by an interrupted turn is not shown as active while idle", () => {
  // An older server still sends the item; idle means nothing is in progress.
  const text = statusText(state({ busy: false, activeTodo: "Running the tests", todoCounts: { completed: 3, total: 8 } }));
  assert.equal(text, "$(compass) ask before edits · claude-sonnet-4-5 · (3/8)");
  assert.doesNotMatch(statusTooltip(state({ busy: false, activeTodo: "Running the tests" })), /working/);
});

test("the tooltip counts tool calls in words", () => {
  assert.match(statusTooltip(state({ busy: true, turnId: "t1", toolsUsed: 1 })), /working… 1 tool call this turn/);
  assert.match(statusTooltip(state({ busy: true, turnId: "t1", toolsUsed: 3 })), /working… 3 tool calls this turn/);
  assert.match(statusTooltip(state({ thinking: { enabled: true, effort: "high", budgetTokens: null } })), /thinking: on \(effort high\)/);
  assert.match(statusTooltip(state()), /thinking: off/);
});

test("status shows counts alone when no todo is in progress", () => {
  assert.equal(statusText(state({ mode: "plan", todoCounts: { completed: 2, total: 2 } })), "$(compass) plan · claude-sonnet-4-5 · (2/2)");
});

test("status spins while busy and counts queued prompts", () => {
  const text = statusText(state({ busy: true, turnId: "t1", queue: ["a", "b"] }));
  assert.ok(text.startsWith("$(sync~spin) "), text);
  assert.ok(text.endsWith("· 2 queued"), text);
});

test("model ids lose their date suffix only", () => {
  assert.equal(shortModel("claude-opus-4-1-20250805"), "claude-opus-4-1");
  assert.equal(shortModel("my-proxy-model"), "my-proxy-model");
});

test("tooltip names the thinking budget and the session", () => {
  const tip = statusTooltip(state({ thinking: { enabled: true, budgetTokens: 2048 } }));
  assert.match(tip, /thinking: on \(2048 tokens\)/);
  assert.match(tip, /session: s1/);
});

test("tooltip says when the offline demo plays instead of a model", () => {
  assert.match(statusTooltip(state(), "demo"), /offline demo: no API key/);
  assert.doesNotMatch(statusTooltip(state(), "anthropic"), /demo/);
});

test("the status bar says the offline demo plays (issue 36): no model answers, so it stands in the model's place", () => {
  assert.equal(statusText(state(), "demo"), "$(compass) ask before edits · offline demo");
  assert.equal(statusText(state({ busy: true, turnId: "t1", queue: ["a"] }), "demo"), "$(sync~spin) ask before edits · offline demo · 1 queued");
  assert.equal(statusText(state(), "scripted"), "$(compass) ask before edits · scripted model");
  assert.equal(statusText(state(), "anthropic"), "$(compass) ask before edits · claude-sonnet-4-5");
});
