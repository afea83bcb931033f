import assert from "node:assert/strict";
import { test } from "node:test";
import { validateSettings, WEB_TOOL_OFF, type Settings } from "../../src/initOptions";
import { age, folderName, sessionPickItem } from "../../src/sessionsText";
import { statusText } from "../../src/statusText";
import type { State } from "../../src/protocol";

const now = Date.parse("2026-11-22T12:00:00Z");

test("a session in the History picker shows its folder, title, turns and age", () => {
  const item = sessionPickItem(
    { sessionId: "ses_2", title: "Fix the parser", createdAt: "2026-11-22T08:00:00Z", updatedAt: "2026-11-22T09:00:00Z", turns: 1, parentId: "ses_1", workspace: "/home/me/proj/" },
    "ses_9",
    now,
  );
  assert.equal(item.label, "Fix the parser");
  assert.equal(item.description, "1 turn · 3 h ago");
  assert.match(item.detail, /proj/);
  assert.match(item.detail, /forked from ses_1/);
});

test("ages read like people say them", () => {
  assert.equal(age("2026-11-22T11:59:40Z", now), "just now");
  assert.equal(age("2026-11-22T11:15:00Z", now), "45 min ago");
  assert.equal(age("2026-11-21T10:00:00Z", now), "yesterday");
  assert.equal(age("2026-11-12T10:00:00Z", now), "10 days ago");
  assert.equal(folderName("/a/b/c"), "c");
});

const base: Settings = { pythonPath: "", model: "", permissionMode: "default", toolBudget: 20, baseUrl: "", demoScript: "", dataDir: "", webSearch: WEB_TOOL_OFF, webFetch: WEB_TOOL_OFF };

test("a malformed base URL is reported as such, naming the setting", () => {
  assert.equal(validateSettings(base), undefined);
  assert.equal(validateSettings({ ...base, baseUrl: "http://127.0.0.1:8080" }), undefined);
  for (const bad of ["htp//nope", "localhost:8080", "ftp://x", "http//x"]) {
    assert.match(validateSettings({ ...base, baseUrl: bad }) ?? "", /tiller\.baseUrl' is not a valid http\(s\) URL/, bad);
  }
});

test("the status bar shows context and cost from State, nothing before", () => {
  const state: State = {
    sessionId: "s",
    mode: "plan",
    model: "claude-sonnet-5-5",
    thinking: { enabled: false, budgetTokens: null },
    busy: false,
    turnId: null,
    queue: [],
    activeTodo: null,
    todoCounts: { completed: 0, total: 0 },
    toolsUsed: 0,
  };
  assert.equal(statusText(state), "$(compass) plan · claude-sonnet-5-5");
  assert.equal(statusText({ ...state, context: { usedTokens: 50_000, windowTokens: 1_000_000 }, sessionCostUsd: 1.5 }), "$(compass) plan · claude-sonnet-5-5 · 50k/1M · $1.50");
});
